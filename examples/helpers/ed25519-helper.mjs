#!/usr/bin/env node
// A provisioner helper for the ed25519 flow (features.ed25519, an Organisation Issuer network), the
// counterpart of upstream's docs/static/ed25519-helper.rb: the node made an ed25519 key pair
// (gen25519); this helper configures the node for the `choria` security provider and returns the
// claims the provisioner puts in the server JWT it signs for the node.
//
//   helper: /path/to/examples/helpers/ed25519-helper.mjs
//   features: {jwt: true, ed25519: true}
//
// Environment:
//   RXFLEET_HELPER_ISSUER   the Organisation Issuer's public key, hex (required)
//   RXFLEET_HELPER_BROKERS  plugin.choria.middleware_hosts for the node (default nats://localhost:4222)
//   RXFLEET_HELPER_YEARS    server JWT validity in years (default 5)
import process from 'node:process';

/** All of stdin. Read as a stream: fs.readFileSync(0) fails with EAGAIN when Node has made stdin non-blocking. */
async function readStdin() {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) text += chunk;
  return text;
}
import { join } from 'node:path';

/** The reply for one request: a configuration, or a deferral saying what is missing. */
function respond(input) {
  const reply = { defer: false, msg: '', certificate: '', ca: '', configuration: {}, server_claims: {} };
  const refuse = (msg) => ({ ...reply, defer: true, msg });

  let request;
  try {
    request = JSON.parse(input);
    // The inventory arrives as a JSON string inside the JSON, as upstream sends it.
    request.inventory = request.inventory ? JSON.parse(request.inventory) : {};
  } catch (error) {
    return refuse(`could not read the request: ${error.message}`);
  }

  const issuer = process.env.RXFLEET_HELPER_ISSUER;
  const ed = request.ed25519_pubkey;
  if (!issuer) return refuse('RXFLEET_HELPER_ISSUER is not set: the helper needs the Organisation Issuer public key');
  if (!request.identity) return refuse('No identity received in request');
  if (!ed || !ed.public_key) return refuse('No ed25519 public key received');
  if (!ed.directory) return refuse('No ed25519 directory received');

  reply.configuration = {
    identity: request.identity,
    loglevel: 'info',
    // Without this the node would stay in provisioning mode and be provisioned for ever.
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': process.env.RXFLEET_HELPER_BROKERS || 'nats://localhost:4222',
    rpcauthorization: '0',
    'plugin.security.provider': 'choria',
    'plugin.security.issuer.names': 'choria',
    'plugin.security.issuer.choria.public': issuer,
    'plugin.security.choria.token_file': join(ed.directory, 'server.jwt'),
    'plugin.security.choria.seed_file': join(ed.directory, 'server.seed'),
  };

  // exp is an absolute Unix time. (Upstream's example sends 5*365 days in seconds, a date in 1974,
  // so the provisioner falls back to server_jwt_validity.)
  const years = Number(process.env.RXFLEET_HELPER_YEARS || 5);
  reply.server_claims = {
    exp: Math.floor(Date.now() / 1000) + Math.round(years * 365 * 24 * 3600),
    permissions: { streams: true, submission: true },
  };
  reply.msg = `configured ${request.identity} (choria ${request.inventory.version || 'unknown version'})`;
  return reply;
}

process.stdout.write(JSON.stringify(respond(await readStdin())));
