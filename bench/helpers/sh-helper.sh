#!/bin/sh
# A helper in POSIX sh for bench:provision: the same answer as examples/helpers/minimal-helper.mjs
# (the node's identity, out of provisioning mode), without Node's start-up (a tenth of a second of
# CPU here), so the benchmark measures the provisioner rather than the helper's interpreter. It
# reads the identity with parameter expansion: no other process is started.
IFS= read -r request || [ -n "$request" ]
identity=${request#*\"identity\":\"}
identity=${identity%%\"*}
printf '{"defer":false,"msg":"configured %s","certificate":"","ca":"","configuration":{"identity":"%s","plugin.choria.server.provision":"false","plugin.choria.middleware_hosts":"nats://localhost:4222"}}' "$identity" "$identity"
