#!/bin/sh
# A persistent rxfleet helper in POSIX sh (rxfleet.helper_mode: persistent), with no other program:
# it reads one request per line on stdin and writes one answer per line on stdout, the node's
# identity out of provisioning mode, as minimal-helper.mjs does.
#
#   helper: /path/to/examples/helpers/persistent-helper.sh
#   rxfleet: {helper_mode: persistent}
#
# sh has no JSON parser, so this helper takes apart only what rxfleet guarantees about a request
# line (docs/provisioner/helper.md, "The persistent helper"): it starts
# {"id":"<id>","identity":"<identity>", compact, and neither value needs escaping for a Choria
# identity. It reads nothing else; a helper that needs the inventory, the CSR or the JWT wants a JSON
# parser (examples/helpers/persistent-helper.mjs, or jq where it is installed).
#
# Environment: RXFLEET_HELPER_BROKERS, plugin.choria.middleware_hosts for the node (default
# nats://localhost:4222). read and printf are shell built-ins: no process is started per request.
brokers=${RXFLEET_HELPER_BROKERS:-nats://localhost:4222}
while IFS= read -r request || [ -n "$request" ]; do
  case $request in
    '{"id":"'*) ;;
    *) echo "not a request line: $request" >&2; continue ;;
  esac
  id=${request#\{\"id\":\"}
  id=${id%%\"*}
  identity=${request#*\"identity\":\"}
  identity=${identity%%\"*}
  case $identity in
    *\\*|'') printf '{"id":"%s","defer":true,"msg":"cannot read this identity without a JSON parser"}\n' "$id"; continue ;;
  esac
  printf '{"id":"%s","defer":false,"msg":"configured %s","certificate":"","ca":"","configuration":{"identity":"%s","plugin.choria.server.provision":"false","plugin.choria.middleware_hosts":"%s","loglevel":"info"}}\n' "$id" "$identity" "$identity" "$brokers"
done
