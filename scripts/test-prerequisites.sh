#!/bin/sh
# What `npm test` needs from the machine, checked once before jest starts (npm's `pretest`), so a
# missing service is one clear line rather than a hundred failed specs. Never run by `npm ci`.
#
# The specs use real parts: a private nats-server per suite, private LXD daemons (with iptables and
# dnsmasq for their bridges, and a static busybox for the test image), promtool, and systemd-analyze
# (the example units are verified), lintian (the Debian package is checked) and strip from binutils
# (npm run package strips the binary). On Debian, run as root, the missing packages are installed with
# apt-get; otherwise the exact command is printed and the run stops. When everything is there this
# costs one dpkg-query per package.
set -eu

PACKAGES="nats-server lxd iptables dnsmasq-base prometheus busybox-static systemd lintian binutils"
# The executable each package brings, for machines without dpkg.
COMMANDS="nats-server lxd iptables dnsmasq promtool busybox systemd-analyze lintian strip"

say() { printf 'npm test: %s\n' "$*" >&2; }

if ! command -v dpkg-query >/dev/null 2>&1; then
  missing=""
  for c in $COMMANDS; do command -v "$c" >/dev/null 2>&1 || missing="$missing $c"; done
  if [ -n "$missing" ]; then
    say "not a Debian system, and these are not on PATH:$missing (Debian packages: $PACKAGES)"
    exit 1
  fi
else
  missing=""
  for p in $PACKAGES; do
    [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" = installed ] || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
      say "missing Debian packages:$missing; install them as root with: apt-get install -y --no-install-recommends$missing"
      exit 1
    fi
    say "installing the Debian packages the specs need:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
  fi
fi

if [ "$(id -u)" != 0 ]; then
  say "the LXD specs start private LXD daemons, which needs root: run npm test as root"
  exit 1
fi
