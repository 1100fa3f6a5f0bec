#!/usr/bin/env node
// A helper for the chaos suite's helper-failures scenario: the first run for a node fails in the
// way the node's number picks (node-<n>: n mod 8), every later run answers as the sample helper.
// The first argument is a directory where it notes the nodes it has failed once.
//   0 ok   1 timeout (sleeps)   2 exit 3 with stderr   3 not JSON   4 nothing   5 20 MB of output
//   6 killed by SIGTERM   7 answers but leaves a child process running
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { setInterval } from 'node:timers';

let input = '';
process.stdin.setEncoding('utf8');
for await (const chunk of process.stdin) input += chunk;
const identity = JSON.parse(input).identity ?? '';
const n = Number(/-(\d+)\./.exec(identity)?.[1] ?? 0);
const mark = join(process.argv[2], identity);
const ok = () =>
  process.stdout.write(JSON.stringify({ defer: false, msg: 'ok', configuration: { identity, 'plugin.choria.server.provision': 'false' } }));
if (existsSync(mark)) {
  ok();
} else {
  writeFileSync(mark, '');
  switch (n % 8) {
    case 1:
      setInterval(() => undefined, 1000);
      break;
    case 2:
      process.stderr.write('flaky-helper: the CA did not answer\n');
      process.exitCode = 3;
      break;
    case 3:
      process.stdout.write('{"configuration": ');
      break;
    case 4:
      break;
    case 5: {
      const block = 'x'.repeat(1 << 20);
      let left = 20;
      const more = () => {
        while (left > 0) {
          left--;
          if (!process.stdout.write(block)) return process.stdout.once('drain', more);
        }
      };
      more();
      break;
    }
    case 6:
      process.kill(process.pid, 'SIGTERM');
      setInterval(() => undefined, 1000);
      break;
    case 7:
      spawn(process.execPath, ['-e', 'setInterval(() => undefined, 1000)', 'flaky-helper-leftover'], { stdio: 'ignore' }).unref();
      ok();
      break;
    default:
      ok();
  }
}
