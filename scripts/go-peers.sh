#!/bin/sh
# Installs the real peers the specs and benches talk to (scripts/go-peers.conf), pinned, from the Go
# module proxy into .cache/peers/<name>-<version>/, and skips any already there: a later run, or a
# second clone sharing the Go caches, costs a few stat calls. Run by scripts/test-prerequisites.sh.
#
# nats-server and the Go provisioner are `go install MODULE@VERSION`. go-choria cannot be: its
# server's agents (choria_provision among them) are compiled in by files that `go generate -run
# plugin` writes from packager/plugins.yaml, so a plain `go install` makes a broker and a client
# whose `server run` refuses to start ("no agent providers present"). It is built as go-choria's
# own ABTaskFile builds it, from the module the proxy serves (`go mod download`): generate the
# plugin loaders, then `go build` with the provisioning JWT's path compiled in, as a site does.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/go-peers.conf"
peers=${RXFLEET_PEERS_DIR:-$root/.cache/peers}
say() { printf 'go peers: %s\n' "$*" >&2; }

if command -v go >/dev/null 2>&1; then go=go
elif [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go
else say "no Go toolchain (go on PATH or /usr/local/go/bin/go): install Go 1.25 or later"; exit 1
fi
# The modules' own go.mod lines (go 1.25.0) and this Go; never a toolchain download.
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
mkdir -p "$peers"

# nats-server: `go install` straight from the proxy.
dir="$peers/nats-server-$NATS_SERVER_VERSION"
if [ ! -x "$dir/nats-server" ]; then
  say "installing $NATS_SERVER_MODULE@$NATS_SERVER_VERSION"
  GOBIN="$dir" "$go" install "$NATS_SERVER_MODULE@$NATS_SERVER_VERSION"
fi

# go-choria: the module's source from the proxy, its plugin loaders generated, built.
dir="$peers/choria-$CHORIA_VERSION"
if [ ! -x "$dir/choria" ]; then
  say "building $CHORIA_MODULE@$CHORIA_VERSION (module from the proxy, plugins generated as its ABTaskFile does)"
  src=$("$go" mod download -json "$CHORIA_MODULE@$CHORIA_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -n "$src" ] || { say "go mod download gave no directory for $CHORIA_MODULE@$CHORIA_VERSION"; exit 1; }
  build=$(mktemp -d "$peers/.build-choria-XXXXXX")
  trap 'rm -rf "$build"' EXIT
  cp -R "$src/." "$build/"
  chmod -R u+w "$build"
  (
    cd "$build"
    "$go" generate -run plugin >/dev/null 2>&1 || "$go" generate -run plugin
    mkdir -p "$dir"
    "$go" build -trimpath -ldflags "-s -w -X github.com/choria-io/go-choria/build.ProvisionJWTFile=$CHORIA_PROVISIONING_JWT" -o "$dir/choria.tmp" .
    mv "$dir/choria.tmp" "$dir/choria"
  )
  rm -rf "$build"
  trap - EXIT
fi

# The Go provisioner, when the proxy serves it (today it refuses: say so, once, and go on).
dir="$peers/provisioner-$PROVISIONER_VERSION"
if [ ! -x "$dir/provisioner" ]; then
  if out=$(GOBIN="$dir" "$go" install "$PROVISIONER_MODULE@$PROVISIONER_VERSION" 2>&1); then
    say "installed $PROVISIONER_MODULE@$PROVISIONER_VERSION"
  else
    say "not installed, the proxy refuses it: $(printf '%s' "$out" | tr '\n' ' ' | sed 's/[[:space:]]*$//')"
    rmdir "$dir" 2>/dev/null || true
  fi
fi
