/**
 * `npm run bench:helper`: how many helper runs a second the provisioner can make, beside the
 * physical limit measured in the same run (a bare `spawn` + exit of the same executable, no
 * stdin, no decoding). One line of JSON per figure.
 *
 * Helpers: `/usr/bin/printf {...}` (a helper that costs nothing, so the runner's own overhead
 * shows), `bench/helpers/sh-helper.sh` (`bench:provision`'s per-node helper: a `/bin/sh` start)
 * and `examples/helpers/minimal-helper.mjs` (a real Node helper: its start-up dominates). For
 * each, at 1, 8 and 64 at once (64: the daemon's default workers; the Node helper at 1 and 8), the
 * rate of:
 *
 * - `bare`: `spawn(executable, { stdio: 'ignore' })` and its exit, the baseline;
 * - `pipes`: the same with the three pipes every helper needs (stdin, stdout, stderr) and its own
 *   process group, unsupervised: the floor for a helper run;
 * - `runner`: the daemon's `HelperRunner` (stdin, stdout, decoding, the supervisor);
 * - `supervised`: `spawnSupervised` and exit (what tying the helper's life to the daemon's costs);
 * - `watchdog`: the watchdog per helper the daemon used before issue 26 (a `/bin/sh` trampoline
 *   and two forks each), and `setpriv`: `setpriv --pdeathsig KILL` in front of the helper, the
 *   alternatives, measured beside it.
 *
 * Each is measured ROUNDS times (3), interleaved, and the median printed, with the CPU per run
 * (this process, the children it reaped, and the supervisor; the watchdog's orphaned forks are
 * not counted). RUNS (200) scales the runs per measurement.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { HelperRunner } from '../streams/helper/helperRunner';
import { groupSupervisor } from '../streams/helper/groupSupervisor';
import { spawnSupervised } from '../streams/helper/supervisedSpawn';
import { buildHelperInput } from '../lib/provision/helper/helperInput';
import { benchOutput } from './machineLoad';

const RUNS = Number(process.env.RUNS ?? 200);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CONCURRENCY = [1, 8, 64];
const MINIMAL = resolve(__dirname, '../examples/helpers/minimal-helper.mjs');
const SH_HELPER = resolve(__dirname, 'helpers/sh-helper.sh');
const SETPRIV = '/usr/bin/setpriv';
const TICK_MS = 10; // Linux's USER_HZ: /proc's times are in hundredths of a second.
// The load average at the start and the end; every figure marked when the machine was busy.
const print = benchOutput('bench:helper').print;
const now = (): number => Number(process.hrtime.bigint()) / 1e6;

/** CPU ms of `pid` (and, for this process, the children it reaped), from /proc. */
function cpuMs(pid: number | 'self' | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat
      .slice(stat.lastIndexOf(')') + 2)
      .split(' ')
      .map(Number);
    // utime, stime, cutime, cstime: fields 14-17, here from field 3 on.
    return (fields[11] + fields[12] + fields[13] + fields[14]) * TICK_MS;
  } catch {
    return 0;
  }
}

/** Runs `task` `runs` times with at most `concurrency` at once: runs per second and CPU ms per run. */
async function rate(runs: number, concurrency: number, task: () => Promise<unknown>): Promise<{ perSecond: number; cpuMs: number }> {
  let next = 0;
  const supervisor = groupSupervisor.pid;
  const cpu = cpuMs('self') + cpuMs(supervisor);
  const start = now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) {
        next++;
        await task();
      }
    }),
  );
  const seconds = (now() - start) / 1000;
  return { perSecond: runs / seconds, cpuMs: (cpuMs('self') + cpuMs(supervisor) - cpu) / runs };
}

/** Resolves when `child` has closed, failing on a start error. */
function closed(child: ChildProcess, feed: boolean): Promise<void> {
  return new Promise((done, fail) => {
    if (feed) {
      child.stdin?.on('error', () => undefined);
      child.stdin?.end('{}');
      child.stdout?.resume();
      child.stderr?.resume();
    }
    child.on('error', fail);
    child.on('close', () => done());
  });
}

/** The watchdog per helper the daemon used before issue 26: kept here only to measure against. */
const TRAMPOLINE = '( { read -r _ <&3; kill -9 0; } </dev/null >/dev/null 2>&1 & ); exec 3<&-; exec "$@"';

function watchdogSpawn(executable: string, args: string[]): Promise<void> {
  const child = spawn('/bin/sh', ['-c', TRAMPOLINE, 'watchdog', executable, ...args], {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
  });
  child.once('exit', () => process.kill(-(child.pid as number), 'SIGKILL'));
  return closed(child, true);
}

function setprivSpawn(executable: string, args: string[]): Promise<void> {
  return closed(spawn(SETPRIV, ['--pdeathsig', 'KILL', '--', executable, ...args], { detached: true, stdio: 'pipe' }), true);
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (n: number, digits = 2): number => Number(n.toFixed(digits));

async function main(): Promise<void> {
  const input = buildHelperInput({
    identity: 'bench.example.net',
    inventory: { version: '0.29.0', agents: ['rpcutil', 'choria_provision'], facts: {} },
  });
  const helpers = [
    { name: 'printf', executable: '/usr/bin/printf', args: ['{"configuration":{"a":"b"}}'], runs: RUNS * 2, concurrency: CONCURRENCY },
    { name: 'sh-helper.sh', executable: SH_HELPER, args: [], runs: RUNS * 2, concurrency: CONCURRENCY },
    // Node's start-up is the whole cost here: fewer runs, and 64 at once says nothing more than 8.
    { name: 'minimal-helper.mjs', executable: MINIMAL, args: [], runs: Math.ceil(RUNS / 8), concurrency: [1, 8] },
  ];
  for (const helper of helpers) {
    const { executable, args } = helper;
    const runner = new HelperRunner({ command: [executable, ...args.map((a) => `'${a}'`)].join(' ') });
    const cases: Record<string, () => Promise<unknown>> = {
      bare: () => closed(spawn(executable, args, { stdio: 'ignore' }), false),
      pipes: () => closed(spawn(executable, args, { detached: true, stdio: 'pipe' }), true),
      runner: () => runner.run(input),
      supervised: () => closed(spawnSupervised(executable, args), true),
      watchdog: () => watchdogSpawn(executable, args),
      ...(existsSync(SETPRIV) ? { setpriv: () => setprivSpawn(executable, args) } : {}),
    };
    // Warm up every path (page cache, JIT, the supervisor) before measuring.
    for (const task of Object.values(cases)) await rate(10, 2, task);
    for (const concurrency of helper.concurrency) {
      const results: Record<string, { perSecond: number; cpuMs: number }[]> = {};
      for (let round = 0; round < ROUNDS; round++)
        for (const [name, task] of Object.entries(cases)) (results[name] ??= []).push(await rate(helper.runs, concurrency, task));
      const bare = median(results.bare.map((r) => r.perSecond));
      const bareCpu = median(results.bare.map((r) => r.cpuMs));
      for (const [name, measured] of Object.entries(results)) {
        const perSecond = median(measured.map((r) => r.perSecond));
        const cpu = median(measured.map((r) => r.cpuMs));
        print({
          figure: 'helper starts/s',
          helper: helper.name,
          path: name,
          concurrency,
          runsPerSecond: Math.round(perSecond),
          rounds: measured.map((r) => Math.round(r.perSecond)),
          baseline: 'bare spawn+exit/s',
          baselinePerSecond: Math.round(bare),
          ratio: round(perSecond / bare),
          cpuMsPerRun: round(cpu),
          baselineCpuMsPerRun: round(bareCpu),
          cpuRatio: round(bareCpu / cpu),
        });
      }
    }
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
