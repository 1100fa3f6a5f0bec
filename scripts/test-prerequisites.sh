#!/bin/sh
# What `npm test` needs from the machine, checked once before jest starts (npm's `pretest`), so a
# missing service is one clear line rather than a hundred failed specs. Never run by `npm ci`.
#
# The specs use real parts: a private nats-server per suite, private LXD and Incus daemons (with
# iptables and dnsmasq for their bridges, and a static busybox for the test image), promtool, and
# systemd-analyze (the example units are verified). Incus 6.0 LTS comes from bookworm-backports,
# which is added as a deb822 source (/etc/apt/sources.list.d/) when no configured source has it. On Debian, run as root, the missing packages are installed with
# apt-get; otherwise the exact command is printed and the run stops. When everything is there this
# costs one dpkg-query per package.
set -eu

PACKAGES="nats-server lxd iptables dnsmasq-base prometheus busybox-static systemd"
# Incus 6.0 LTS is in bookworm's backports only (trixie has it in main).
BACKPORTS_PACKAGES="incus-base incus-client"
# The executable each package brings, for machines without dpkg.
COMMANDS="nats-server lxd incus iptables dnsmasq promtool busybox systemd-analyze"

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
  if [ -n "$missing$backports" ]; then
    if [ "$(id -u)" != 0 ]; then
      say "missing Debian packages:$missing$backports; as root, add bookworm-backports to apt's sources and run:"
      [ -z "$missing" ] || say "  apt-get install -y --no-install-recommends$missing"
      [ -z "$backports" ] || say "  apt-get install -y --no-install-recommends -t bookworm-backports$backports"
      exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    if [ -n "$backports" ]; then
      codename=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
      if [ "$codename" = bookworm ] && ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
        say "adding bookworm-backports (for Incus 6.0 LTS) as /etc/apt/sources.list.d/bookworm-backports.sources"
        cat >/etc/apt/sources.list.d/bookworm-backports.sources <<'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
      fi
    fi
    say "installing the Debian packages the specs need:$missing$backports"
    apt-get update -qq
    # shellcheck disable=SC2086
    [ -z "$missing" ] || apt-get install -y -qq --no-install-recommends $missing >/dev/null
    target=""
    [ "$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")" != bookworm ] || target="-t bookworm-backports"
    # shellcheck disable=SC2086
    [ -z "$backports" ] || apt-get install -y -qq --no-install-recommends $target $backports >/dev/null
  fi
fi

if [ "$(id -u)" != 0 ]; then
  say "the LXD/Incus specs start private LXD and Incus daemons, which needs root: run npm test as root"
  exit 1
fi
