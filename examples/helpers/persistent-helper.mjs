#!/usr/bin/env node
// A persistent rxfleet helper (rxfleet.helper_mode: persistent): a long-running process reading one
// JSON request per line on stdin and writing one JSON answer per line on stdout. A request is the
// per-node helper's input with an "id"; the answer is the per-node helper's output with the same
// "id". It answers like minimal-helper.mjs: the node's identity, out of provisioning mode.
//
//   helper: /path/to/examples/helpers/persistent-helper.mjs
//   rxfleet: {helper_mode: persistent}
//
// Environment (all optional):
//   RXFLEET_HELPER_BROKERS  plugin.choria.middleware_hosts for the node (default nats://localhost:4222)
//   RXFLEET_HELPER_UPGRADE  a version to upgrade the node to first (features.upgrades)
//
// Standard library only. It exits when its stdin ends (rxfleet closes it when it stops).
import process from 'node:process';
import { createInterface } from 'node:readline';

const brokers = process.env.RXFLEET_HELPER_BROKERS || 'nats://localhost:4222';

/** The answer for one request line; never throws, so one bad request cannot stop the helper. */
function answer(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (error) {
    // Without an id the answer could not be matched to its request: say why on stderr, which
    // rxfleet adds to the error it reports when the request times out.
    process.stderr.write(`could not read a request: ${error.message}\n`);
    return undefined;
  }
  const reply = { id: request.id, defer: false, msg: '', certificate: '', ca: '', configuration: {} };
  if (typeof request.identity !== 'string' || request.identity === '') {
    reply.defer = true;
    reply.msg = 'no identity received in the request';
    return reply;
  }
  reply.msg = `configured ${request.identity}`;
  reply.configuration = {
    identity: request.identity,
    // Without this the node would stay in provisioning mode and be provisioned for ever.
    'plugin.choria.server.provision': 'false',
    'plugin.choria.middleware_hosts': brokers,
    loglevel: 'info',
  };
  if (process.env.RXFLEET_HELPER_UPGRADE) reply.upgrade = process.env.RXFLEET_HELPER_UPGRADE;
  return reply;
}

createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  if (line.trim() === '') return;
  const reply = answer(line);
  // One write per answer, newline included: answers never interleave.
  if (reply !== undefined) process.stdout.write(`${JSON.stringify(reply)}\n`);
});
