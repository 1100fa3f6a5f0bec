#!/bin/sh
# What `npm test` needs from the machine, checked once before jest starts (npm's `pretest`), so a
# missing service is one clear line rather than a hundred failed specs. Never run by `npm ci`.
#
# The specs use real parts: a private nats-server per suite, private LXD and Incus daemons (with
# iptables and dnsmasq for their bridges, and a static busybox for the test image), promtool,
# systemd-analyze (the example units are verified), lintian (the Debian package is checked), strip
# from binutils (npm run package strips the binary), SoftHSM and OpenSSL's pkcs11 engine (the
# pkcs11 security provider's token, and its TLS), and the real Go peers: go-choria's broker,
# servers and client, and a current nats-server, built from the Go module proxy (go-peers.sh). Incus 6.0 LTS comes from bookworm-backports,
# which is added as a deb822 source (/etc/apt/sources.list.d/) when no configured source has it. On
# Debian, run as root, the missing packages are installed with
# apt-get; otherwise the exact command is printed and the run stops. When everything is there this
# costs one dpkg-query per package.
set -eu

PACKAGES="nats-server lxd iptables dnsmasq-base prometheus busybox-static systemd lintian binutils openssl logrotate softhsm2 libengine-pkcs11-openssl"
# Incus 6.0 LTS is in bookworm's backports only (trixie has it in main).
BACKPORTS_PACKAGES="incus-base incus-client"
# The executable each package brings, for machines without dpkg.
COMMANDS="nats-server lxd incus iptables dnsmasq promtool busybox systemd-analyze lintian strip openssl logrotate softhsm2-util"

say() { printf 'npm test: %s\n' "$*" >&2; }

if ! command -v dpkg-query >/dev/null 2>&1; then
  missing=""
  for c in $COMMANDS; do command -v "$c" >/dev/null 2>&1 || missing="$missing $c"; done
  if [ -n "$missing" ]; then
    say "not a Debian system, and these are not on PATH:$missing (Debian packages: $PACKAGES)"
    exit 1
  fi
else
  installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]; }
  missing=""
  for p in $PACKAGES; do installed "$p" || missing="$missing $p"; done
  backports=""
  for p in $BACKPORTS_PACKAGES; do installed "$p" || backports="$backports $p"; done
  # Where apt's sources and the release are (a spec points these at a scratch directory).
  apt_dir=${RXFLEET_APT_DIR:-/etc/apt}
  codename=$(. "${RXFLEET_OS_RELEASE:-/etc/os-release}" && printf '%s' "${VERSION_CODENAME:-}")
  # On bookworm Incus 6.0 LTS is a backport; on later releases it is in main.
  target=""
  [ "$codename" != bookworm ] || target=" -t bookworm-backports"
  if [ -n "$missing$backports" ]; then
    if [ "$(id -u)" != 0 ]; then
      main_cmd="apt-get install -y --no-install-recommends$missing"
      backports_cmd="apt-get install -y --no-install-recommends$target$backports"
      if [ -z "$backports" ]; then how=$main_cmd; elif [ -z "$missing" ]; then how=$backports_cmd; else how="$main_cmd && $backports_cmd"; fi
      say "missing Debian packages:$missing$backports; install them as root with: $how"
      [ -z "$backports" ] || [ -z "$target" ] || say "(with bookworm-backports in apt's sources: run as root, this script adds it)"
      exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if [ -n "$backports" ] && [ -n "$target" ] && ! grep -rqs 'bookworm-backports' "$apt_dir/sources.list" "$apt_dir/sources.list.d/"; then
      say "adding bookworm-backports (for Incus 6.0 LTS) as $apt_dir/sources.list.d/bookworm-backports.sources"
      cat >"$apt_dir/sources.list.d/bookworm-backports.sources" <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    fi
    say "installing the Debian packages the specs need:$missing$backports"
    apt-get update -qq
    # shellcheck disable=SC2086
    [ -z "$missing" ] || apt-get install -y -qq --no-install-recommends $missing >/dev/null
    # shellcheck disable=SC2086
    [ -z "$backports" ] || apt-get install -y -qq --no-install-recommends$target $backports >/dev/null
  fi
fi

if [ "$(id -u)" != 0 ]; then
  say "the LXD/Incus specs start private LXD and Incus daemons, which needs root: run npm test as root"
  exit 1
fi

# The real peers (go-choria, a current nats-server, the Go provisioner when the proxy serves it),
# pinned, from the Go module proxy into .cache/peers/ (scripts/go-peers.sh; skipped when there).
sh "${RXFLEET_GO_PEERS_SCRIPT:-$(dirname "$0")/go-peers.sh}"
