/**
 * What the provisioning benchmarks share: the header (the exact command, the machine, the load
 * average) and footer (the load average at the end), processes started and always cleaned up, a
 * daemon's CPU and memory from /proc, /metrics samples, and the physical limits measured in the
 * same run (NATS request/reply, helper starts, persistent helper round trips).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { buildHelperInput } from '../lib/provision/helper/helperInput';
import { HelperRunner } from '../streams/helper/helperRunner';
import { PersistentHelper } from '../streams/helper/persistentHelper';
import { openNatsConnection } from '../streams/natsConnection';
import { sampleValue } from '../spec/helpers/provisioner';
import { RxfleetProcess, startRxfleet } from '../spec/helpers/rxfleetProcess';
import { BenchOutput, benchOutput } from './machineLoad';

const CLOCK_TICKS = 100; // Linux USER_HZ: /proc times are in hundredths of a second.

export const now = (): number => Number(process.hrtime.bigint()) / 1e6;
let output: BenchOutput | undefined;
/** Prints one JSON line; once the header is out, figures are marked when the machine was busy ({@link benchOutput}). */
export const print = (figure: Record<string, unknown>): void =>
  output !== undefined ? output.print(figure) : console.log(JSON.stringify(figure));
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
export const round = (value: number, digits = 1): number => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * The first lines of a benchmark: the load average at the start (bench/machineLoad.ts, which marks
 * every later figure when the machine was busy), then the exact command that reproduces it (the
 * environment variables it reads, then the script) and the machine.
 */
export function printHeader(script: string, environment: readonly string[], settings: Record<string, unknown>): void {
  output = benchOutput(script);
  const env = environment
    .filter((name) => process.env[name] !== undefined)
    .map((name) => `${name}=${JSON.stringify(process.env[name]).slice(1, -1)}`);
  print({ command: [...env, 'node --import tsx', script].join(' '), node: process.version, cpus: cpus().length, ...settings });
}

/** The last line: the load average at the end, to read the figures by. */
export function printFooter(): void {
  output?.end();
}

/** Runs `call` with `inFlight` always outstanding for `seconds`; completed calls per second. */
export async function perSecond(inFlight: number, seconds: number, call: () => Promise<unknown>): Promise<number> {
  let done = 0;
  const start = now();
  const stopAt = start + seconds * 1000;
  const lane = async (): Promise<void> => {
    while (now() < stopAt) {
      await call();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return round(done / ((now() - start) / 1000));
}

/** CPU seconds (user + system), peak RSS and current RSS (MiB), and read and write system calls of a process, from /proc. */
export function processUsage(pid: number): {
  cpuSeconds: number;
  peakRssMiB: number;
  rssMiB: number;
  readCalls: number;
  writeCalls: number;
} {
  // Fields after the command name (which may hold spaces) start at field 3; utime and stime are 14 and 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string): number => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const calls = (field: string): number => Number(new RegExp(`${field}: (\\d+)`).exec(io)?.[1] ?? 0);
  return {
    cpuSeconds,
    peakRssMiB: round(kib('VmHWM') / 1024),
    rssMiB: round(kib('VmRSS') / 1024),
    readCalls: calls('syscr'),
    writeCalls: calls('syscw'),
  };
}

// Every child, so an interrupted run (Ctrl-C) leaves no daemon, fleet or nats-server behind.
const children = new Set<RxfleetProcess>();
const cleanUps: Array<() => Promise<void>> = [];
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of children) child.child.kill('SIGKILL');
    void Promise.allSettled(cleanUps.map((c) => c())).finally(() => process.exit(130));
  });
}

/** Something to undo if the run is interrupted (a temporary directory, a nats-server). */
export function onInterrupt(cleanUp: () => Promise<void>): void {
  cleanUps.push(cleanUp);
}

/** Tracks a process so an interrupted run kills it. */
export function tracked(child: RxfleetProcess): RxfleetProcess {
  children.add(child);
  void child.exited.then(() => children.delete(child));
  return child;
}

/** `rxfleet ...args` (node flags in `nodeArgs`), its stdout always read (a paused pipe would stall the process measured). */
export function start(args: string[], nodeArgs: string[] = []): RxfleetProcess {
  return tracked(startRxfleet(args, { nodeArgs }));
}

/** SIGTERM (the daemon drains and exits 0, writing its profiles), SIGKILL after 30 s. */
export async function stop(child: RxfleetProcess): Promise<void> {
  if (child.running()) child.child.kill('SIGTERM');
  const killer = setTimeout(() => child.child.kill('SIGKILL'), 30_000);
  await child.exited;
  clearTimeout(killer);
}

/** A sample's value from /metrics; NaN when the scrape failed (a daemon under full load may reset it). */
export async function metric(port: number, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
    (r) => r.text(),
    () => '',
  );
  return sampleValue(text, name, labels);
}

/** Why the daemon's cycles failed, from its error lines: counted by step, with the first message of each. */
export function failures(lines: Record<string, unknown>[]): { byStep: Record<string, number>; examples: Record<string, string> } {
  const byStep: Record<string, number> = {};
  const examples: Record<string, string> = {};
  for (const entry of lines) {
    if (typeof entry.step !== 'string') continue;
    byStep[entry.step] = (byStep[entry.step] ?? 0) + 1;
    examples[entry.step] ??= String(entry.msg ?? '');
  }
  return { byStep, examples };
}

/** Request/reply round trips per second over `url` (a payload the size of a Choria RPC request), 1 and 64 in flight. */
export async function natsLimits(
  url: string,
  seconds: number,
): Promise<{ request_reply_per_second_1_in_flight: number; request_reply_per_second_64_in_flight: number }> {
  const a = await openNatsConnection({ servers: [url], name: 'bench-requester' });
  const b = await openNatsConnection({ servers: [url], name: 'bench-responder' });
  try {
    const payload = new Uint8Array(900).fill(120);
    b.nc.subscribe('bench.echo', { callback: (_, msg) => void msg.respond(msg.data) });
    await b.nc.flush();
    const request = () => a.nc.request('bench.echo', payload, { timeout: 5000 });
    return {
      request_reply_per_second_1_in_flight: await perSecond(1, seconds, request),
      request_reply_per_second_64_in_flight: await perSecond(64, seconds, request),
    };
  } finally {
    await a.drain();
    await b.drain();
  }
}

const benchInput = buildHelperInput({ identity: 'node-1.example.net', inventory: { version: '0.29.4' } });

/** Per-node helper runs per second through the daemon's own runner, `concurrency` at once: the helper-start limit. */
export function helperStartLimit(command: string, concurrency: number, seconds: number): Promise<number> {
  const runner = new HelperRunner({ command });
  return perSecond(concurrency, seconds, () => runner.run(benchInput));
}

/**
 * Bare starts of `command` per second (`spawn` with no stdio, and its exit), `concurrency` at once:
 * the machine's own limit, which the helper-start limit is read against.
 */
export function bareSpawnLimit(command: string, concurrency: number, seconds: number): Promise<number> {
  const bare = (): Promise<void> =>
    new Promise((done, fail) => {
      const child = spawn(command, [], { stdio: 'ignore' });
      child.on('error', fail);
      child.on('close', () => done());
    });
  return perSecond(concurrency, seconds, bare);
}

/** Persistent helper round trips per second through the daemon's own pool, `processes` processes, `inFlight` requests outstanding. */
export async function persistentHelperLimit(command: string, processes: number, inFlight: number, seconds: number): Promise<number> {
  const pool = new PersistentHelper({ command, processes });
  try {
    await pool.run(benchInput);
    return await perSecond(inFlight, seconds, () => pool.run(benchInput));
  } finally {
    await pool.close();
  }
}
