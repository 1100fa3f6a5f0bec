#!/usr/bin/env node
// A persistent helper for the backoff bench (bench/provisionBackoff.ts): one JSON request per line
// on stdin, one answer per line on stdout, as examples/helpers/persistent-helper.mjs. It defers
// for ever every node whose number (node-<n>.example.net) is a multiple of FAIL_EVERY (default
// 10: a tenth of the fleet), as a helper whose CA will not sign those nodes until someone fixes
// it would; it configures the others.
import process from 'node:process';
import { createInterface } from 'node:readline';

const every = Number(process.env.FAIL_EVERY ?? 10);

createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  if (line.trim() === '') return;
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return;
  }
  const n = Number(/-(\d+)\./.exec(request.identity ?? '')?.[1] ?? 0);
  const reply =
    n % every === 0
      ? { id: request.id, defer: true, msg: 'the CA will not sign this node' }
      : {
          id: request.id,
          defer: false,
          msg: '',
          configuration: { identity: request.identity, 'plugin.choria.server.provision': 'false' },
        };
  process.stdout.write(`${JSON.stringify(reply)}\n`);
});
