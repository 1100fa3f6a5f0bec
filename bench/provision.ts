/**
 * `npm run bench:provision`: `rxfleet provision` (the built command, as a user runs it) provisioning
 * a fleet run by `rxfleet simulate` (another process, as a real fleet would be) over a private
 * nats-server, with the minimal sample helper. One JSON line per figure.
 *
 * - For each RPC latency (0 and 50 ms) and worker count (16 and 256): nodes provisioned per second
 *   (from the daemon's first /ready to its `provisioned` counter reaching the fleet size), the
 *   daemon's peak RSS (VmHWM) and CPU seconds per node (utime + stime over the run, helpers not
 *   included: they are other processes).
 * - Beside them, the two physical limits measured in the same run: request/reply round trips per
 *   second over the same nats-server (raw nats.js, 1 and 64 in flight), and helper runs per second
 *   with the minimal helper (1 and 16 at once).
 *
 * HELPER chooses the helper: `sh` (default, `bench/helpers/sh-helper.sh`: the minimal helper's
 * answer in POSIX sh, so the figure is the provisioner's) or `sample` (the Node.js sample helper,
 * `examples/helpers/minimal-helper.mjs`: then the figure is the helper's start-up).
 *
 * NODES (default 10000), LATENCIES (0,50), WORKERS (16,256), LIMIT_SECONDS (3) and
 * RUN_TIMEOUT_MINUTES (60) change the run.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { HelperRunner } from '../streams/helper/helperRunner';
import { buildHelperInput } from '../lib/provision/helperInput';
import { sampleHelperPath } from '../bin/sampleHelpers';
import { openNatsConnection } from '../streams/natsConnection';
import { freePort, startNatsServer } from '../streams/natsServerProcess';
import { sampleValue } from '../spec/helpers/provisioner';
import { RxfleetProcess, startRxfleet } from '../spec/helpers/rxfleetProcess';
import { waitFor } from '../spec/helpers/waitFor';
import { benchOutput } from './machineLoad';

const NODES = Number(process.env.NODES ?? 10_000);
const LATENCIES = (process.env.LATENCIES ?? '0,50').split(',').map(Number);
const WORKERS = (process.env.WORKERS ?? '16,256').split(',').map(Number);
const LIMIT_SECONDS = Number(process.env.LIMIT_SECONDS ?? 3);
const RUN_TIMEOUT_MS = Number(process.env.RUN_TIMEOUT_MINUTES ?? 60) * 60_000;
const TOKEN = 'bench-token';
const HELPER = process.env.HELPER === 'sample' ? sampleHelperPath('minimal-helper') : join(__dirname, 'helpers/sh-helper.sh');
const CLOCK_TICKS = 100; // Linux USER_HZ: /proc times are in hundredths of a second.

const now = (): number => Number(process.hrtime.bigint()) / 1e6;
// The load average at the start and the end; every figure marked when the machine was busy.
const print = benchOutput('bench:provision').print;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs `call` with `inFlight` always outstanding for `seconds`; completed calls per second. */
async function perSecond(inFlight: number, seconds: number, call: () => Promise<unknown>): Promise<number> {
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
  return Math.round((done / (now() - start)) * 10_000) / 10;
}

/** CPU seconds (user + system) and peak RSS (MiB) of a process, from /proc. */
function processUsage(pid: number): { cpuSeconds: number; peakRssMiB: number } {
  // Fields after the command name (which may hold spaces) start at field 3; utime and stime are 14 and 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { cpuSeconds, peakRssMiB: Math.round(Number(hwm?.[1] ?? 0) / 102.4) / 10 };
}

// Every child, so an interrupted run (Ctrl-C) leaves no daemon, fleet or nats-server behind.
const children = new Set<RxfleetProcess>();
let cleanUp: () => Promise<void> = async () => undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    for (const child of children) child.child.kill('SIGKILL');
    void cleanUp().finally(() => process.exit(130));
  });
}

/** `rxfleet ...args`, its stdout always read (a paused pipe would stall the process measured). */
function start(args: string[]): RxfleetProcess {
  const child = startRxfleet(args);
  children.add(child);
  void child.exited.then(() => children.delete(child));
  return child;
}

async function stop(child: RxfleetProcess): Promise<void> {
  if (child.running()) child.child.kill('SIGTERM');
  const killer = setTimeout(() => child.child.kill('SIGKILL'), 30_000);
  await child.exited;
  clearTimeout(killer);
}

/** A sample's value from /metrics; NaN when the scrape failed (a daemon under full load may reset it). */
async function metric(port: number, name: string): Promise<number> {
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => '');
  return sampleValue(text, name);
}

async function limits(url: string): Promise<Record<string, number>> {
  const a = await openNatsConnection({ servers: [url], name: 'bench-requester' });
  const b = await openNatsConnection({ servers: [url], name: 'bench-responder' });
  // A payload the size of a Choria RPC request.
  const payload = new Uint8Array(900).fill(120);
  b.nc.subscribe('bench.echo', { callback: (_, msg) => void msg.respond(msg.data) });
  await b.nc.flush();
  const request = () => a.nc.request('bench.echo', payload, { timeout: 5000 });
  const rr1 = await perSecond(1, LIMIT_SECONDS, request);
  const rr64 = await perSecond(64, LIMIT_SECONDS, request);
  await a.drain();
  await b.drain();

  const runner = new HelperRunner({ command: HELPER });
  const input = buildHelperInput({ identity: 'node-1.example.net', inventory: { version: '0.29.4' } });
  const helpers1 = await perSecond(1, LIMIT_SECONDS, () => runner.run(input));
  const helpers16 = await perSecond(16, LIMIT_SECONDS, () => runner.run(input));
  const figures = { request_reply_per_second_1_in_flight: rr1, request_reply_per_second_64_in_flight: rr64, helper_runs_per_second_1_at_once: helpers1, helper_runs_per_second_16_at_once: helpers16 };
  print({ figure: 'physical limits', ...figures });
  return figures;
}

async function provisionRun(url: string, dir: string, latency: number, workers: number, baseline: Record<string, number>): Promise<void> {
  const fleet = start(['simulate', '--nats', url, '--nodes', String(NODES), '--token', TOKEN, '--latency', `${latency}ms`, '--restart-delay', '0', '--json', '--report-every', '0', '--log-level', 'error']);
  await fleet.next((l) => l.type === 'ready');

  const port = await freePort();
  const config = join(dir, `provision-${latency}-${workers}.yaml`);
  writeFileSync(config, [`helper: ${HELPER}`, `token: ${TOKEN}`, 'choria_insecure: true', `workers: ${workers}`, `monitor_port: ${port}`, 'loglevel: error', 'interval: 1m'].join('\n'));
  const choria = join(dir, 'choria.cfg');
  writeFileSync(choria, `identity = bench-provisioner.example.net\nplugin.choria.middleware_hosts = ${url}\n`);
  const daemon = start(['provision', '--config', config, '--choria-config', choria]);
  try {
    await waitFor(async () => {
      if (!daemon.running()) throw new Error(`the daemon exited before it was ready: ${daemon.stderr().slice(-500)}`);
      return (await fetch(`http://127.0.0.1:${port}/ready`).then((r) => r.status, () => 0)) === 200;
    }, 'the daemon to be ready', 60_000);
    const pid = daemon.child.pid as number;
    const before = processUsage(pid);
    const started = now();
    let provisioned = 0;
    while (provisioned < NODES && now() - started < RUN_TIMEOUT_MS) {
      await sleep(250);
      const value = await metric(port, 'choria_provisioner_provisioned');
      if (!Number.isNaN(value)) provisioned = value;
    }
    const seconds = (now() - started) / 1000;
    const after = processUsage(pid);
    const errors = await metric(port, 'choria_provisioner_provision_errors');
    const helperErrors = await metric(port, 'choria_provisioner_helper_errors');
    // The fleet's own count: a node configured twice is a duplicate, whatever the daemon believes.
    await stop(fleet);
    const fleetSummary = await fleet.next((l) => l.type === 'summary').catch(() => ({}) as Record<string, unknown>);
    print({
      figure: 'nodes provisioned per second',
      nodes: NODES,
      rpc_latency_ms: latency,
      workers,
      provisioned,
      finished: provisioned >= NODES,
      seconds: Math.round(seconds * 10) / 10,
      nodes_per_second: Math.round((provisioned / seconds) * 10) / 10,
      peak_rss_mib: after.peakRssMiB,
      cpu_seconds_per_node: provisioned > 0 ? Math.round(((after.cpuSeconds - before.cpuSeconds) / provisioned) * 1e5) / 1e5 : null,
      provision_errors: errors,
      helper_errors: helperErrors,
      fleet_provisioned: fleetSummary.provisioned,
      fleet_duplicates: fleetSummary.duplicates,
      // Its error lines (loglevel error) say why nodes failed: counted by the cycle's step.
      failures_by_step: failuresByStep(daemon.lines),
      failure_examples: failureExamples(daemon.lines),
      baseline_helper_runs_per_second_16_at_once: baseline.helper_runs_per_second_16_at_once,
      baseline_request_reply_per_second_64_in_flight: baseline.request_reply_per_second_64_in_flight,
    });
  } finally {
    await stop(daemon);
    await stop(fleet);
  }
}

function failuresByStep(lines: Record<string, unknown>[]): Record<string, number> {
  const steps: Record<string, number> = {};
  for (const entry of lines) {
    const step = typeof entry.step === 'string' ? entry.step : String(entry.msg ?? '').slice(0, 40);
    steps[step] = (steps[step] ?? 0) + 1;
  }
  return steps;
}

/** The first error message of each step, so a figure says why its failures happened. */
function failureExamples(lines: Record<string, unknown>[]): Record<string, string> {
  const examples: Record<string, string> = {};
  for (const entry of lines) if (typeof entry.step === 'string' && examples[entry.step] === undefined) examples[entry.step] = String(entry.msg ?? '');
  return examples;
}

async function main(): Promise<void> {
  print({ node: process.version, cpus: cpus().length, nodes: NODES, latencies_ms: LATENCIES, workers: WORKERS, helper: HELPER });
  const server = await startNatsServer({ jetstream: false });
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-bench-provision-'));
  cleanUp = async () => {
    rmSync(dir, { recursive: true, force: true });
    await server.stop();
  };
  try {
    const baseline = await limits(server.url);
    for (const latency of LATENCIES) for (const workers of WORKERS) await provisionRun(server.url, dir, latency, workers, baseline);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
