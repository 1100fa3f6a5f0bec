#!/usr/bin/env node
// A minimal rxfleet / Choria Provisioner helper: reads the node's details as JSON on stdin and
// writes the configuration the node should run with as JSON on stdout.
//
//   helper: /path/to/examples/helpers/minimal-helper.mjs
//
// Environment (all optional):
//   RXFLEET_HELPER_BROKERS  plugin.choria.middleware_hosts for the node (default nats://localhost:4222)
//   RXFLEET_HELPER_UPGRADE  a version to upgrade the node to first (features.upgrades)
//
// It only uses Node's standard library, so it starts in a few tens of milliseconds.
import process from 'node:process';

/** All of stdin. Read as a stream: fs.readFileSync(0) fails with EAGAIN when Node has made stdin non-blocking. */
async function readStdin() {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

/** The reply for the request text; never throws. */
function respond(text) {
  const reply = { defer: false, msg: '', certificate: '', ca: '', configuration: {} };
  try {
    const request = JSON.parse(text);
    if (typeof request.identity !== 'string' || request.identity === '') {
      reply.defer = true;
      reply.msg = 'no identity received in the request';
    } else {
      reply.msg = `configured ${request.identity}`;
      reply.configuration = {
        identity: request.identity,
        // Without this the node would stay in provisioning mode and be provisioned for ever.
        'plugin.choria.server.provision': 'false',
        'plugin.choria.middleware_hosts': process.env.RXFLEET_HELPER_BROKERS || 'nats://localhost:4222',
        loglevel: 'info',
      };
      if (process.env.RXFLEET_HELPER_UPGRADE) reply.upgrade = process.env.RXFLEET_HELPER_UPGRADE;
    }
  } catch (error) {
    // A soft failure: the provisioner retries the node at the next discovery.
    reply.defer = true;
    reply.msg = `could not read the request: ${error.message}`;
  }
  return reply;
}

// No top-level await: the rxfleet binary bundles this script as CommonJS to run it without Node.
readStdin().then((text) => process.stdout.write(JSON.stringify(respond(text))));
