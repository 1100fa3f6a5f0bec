/**
 * `npm run bench:helper`: how many helper runs a second the provisioner can make, beside the
 * physical limit measured in the same run (a bare `spawn` + exit of the same executable, no
 * stdin, no decoding). One line of JSON per figure.
 *
 * Helpers: `/usr/bin/printf {...}` (a helper that costs nothing, so the runner's own overhead
 * shows) and `examples/helpers/minimal-helper.mjs` (a real Node helper: its start-up dominates).
 * Beside them, the cost of the watchdog that ties a helper's life to the daemon's
 * (`spawnSupervised`: one `/bin/sh` and two forks) against the same bare spawn.
 */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { HelperRunner } from '../streams/helper/helperRunner';
import { spawnSupervised } from '../streams/helper/supervisedSpawn';
import { buildHelperInput } from '../lib/provision/helperInput';
import { benchOutput } from './machineLoad';

const RUNS = Number(process.env.RUNS ?? 200);
const CONCURRENCY = [1, 8];
const MINIMAL = resolve(__dirname, '../examples/helpers/minimal-helper.mjs');
// The load average at the start and the end; every figure marked when the machine was busy.
const print = benchOutput('bench:helper').print;
const now = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Runs `task` `runs` times with at most `concurrency` at once; returns runs per second. */
async function rate(runs: number, concurrency: number, task: (i: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const start = now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) await task(next++);
    }),
  );
  return Math.round((runs / (now() - start)) * 1000);
}

function supervisedSpawn(executable: string, args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawnSupervised(executable, args);
    child.stdin?.end();
    child.stdout?.resume();
    child.stderr?.resume();
    child.on('error', fail);
    child.on('close', () => done());
  });
}

function bareSpawn(executable: string, args: string[]): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(executable, args, { stdio: 'ignore' });
    child.on('error', fail);
    child.on('close', () => done());
  });
}

async function main(): Promise<void> {
  const input = buildHelperInput({
    identity: 'bench.example.net',
    inventory: { version: '0.29.0', agents: ['rpcutil', 'choria_provision'], facts: {} },
  });
  const helpers = [
    { name: 'printf', executable: '/usr/bin/printf', args: ['{"configuration":{"a":"b"}}'], runs: RUNS * 5 },
    { name: 'minimal-helper.mjs', executable: MINIMAL, args: [], runs: RUNS },
  ];
  for (const helper of helpers) {
    const runner = new HelperRunner({ command: [helper.executable, ...helper.args.map((a) => `'${a}'`)].join(' ') });
    // Warm up both paths (page cache, JIT) before measuring.
    await rate(10, 2, () => runner.run(input));
    await rate(10, 2, () => bareSpawn(helper.executable, helper.args));
    for (const concurrency of CONCURRENCY) {
      const baseline = await rate(helper.runs, concurrency, () => bareSpawn(helper.executable, helper.args));
      const runs = await rate(helper.runs, concurrency, () => runner.run(input));
      print({
        figure: 'helper runs/s',
        helper: helper.name,
        concurrency,
        runsPerSecond: runs,
        baseline: 'bare spawn+exit/s',
        baselinePerSecond: baseline,
        ratio: Number((runs / baseline).toFixed(2)),
      });
      const supervised = await rate(helper.runs, concurrency, () => supervisedSpawn(helper.executable, helper.args));
      print({
        figure: 'supervised spawn+exit/s',
        helper: helper.name,
        concurrency,
        runsPerSecond: supervised,
        baseline: 'bare spawn+exit/s',
        baselinePerSecond: baseline,
        ratio: Number((supervised / baseline).toFixed(2)),
        msPerSpawn: Number((1000 / supervised - 1000 / baseline).toFixed(2)),
      });
    }
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
