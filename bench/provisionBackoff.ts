/**
 * The failing nodes' backoff (DECISIONS P22), run by `npm run bench:provision` after the rate
 * bench: a fleet of BACKOFF_NODES (default 50,000) from `rxfleet simulate`, a tenth of which the
 * helper defers for ever (bench/helpers/failing-helper.mjs, every node whose number is a multiple
 * of BACKOFF_FAIL_EVERY, default 10), provisioned twice in the same run by the daemon (in this
 * process, so the interval can be shortened and every cycle's record counted):
 *
 * - today's behaviour, `failure_backoff: 0`: a failing node is tried at every sighting, as upstream;
 * - the backoff, `failure_backoff` of BACKOFF_CEILING_INTERVALS intervals (default 60: an hour at
 *   upstream's one-minute interval).
 *
 * For each, over BACKOFF_WINDOW_INTERVALS discovery intervals from the daemon's start (default 60:
 * an hour at BACKOFF_INTERVAL, default 1m): the helper runs and RPC attempts spent on the failing
 * nodes (counted from the cycles' own records, `cycles$`), as measured and per hour at the
 * interval used, and the steady state the rule gives (one try per node per interval today, one per
 * ceiling with the backoff); and the time to provision every healthy node. A fresh fleet for each
 * run. BACKOFF_INTERVAL shortens the interval (10s gives an hour's rounds in ten minutes) and
 * BACKOFF_CEILING_INTERVALS scales with it; WORKERS (64), HELPER_PROCESSES (2), LATENCY (0 ms)
 * as bench:provision. The load average first and last.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { startProvisioner } from '../bin/provision/daemon';
import { parseChoriaClientConfig } from '../lib/choria/clientConfig';
import { parseGoDuration } from '../lib/duration';
import { parseProvisionerConfig, requireValidConfig } from '../lib/provision/config/config';
import { CycleRecord } from '../lib/provision/records/cycleRecord';
import { startNatsServer } from '../streams/natsServerProcess';
import { now, onInterrupt, print, printFooter, printHeader, round, sleep, start, stop } from './provisionHarness';

const NODES = Number(process.env.BACKOFF_NODES ?? 50_000);
const FAIL_EVERY = Number(process.env.BACKOFF_FAIL_EVERY ?? 10);
const INTERVAL_MS = parseGoDuration(process.env.BACKOFF_INTERVAL ?? '1m');
const CEILING_INTERVALS = Number(process.env.BACKOFF_CEILING_INTERVALS ?? 60);
const WINDOW_INTERVALS = Number(process.env.BACKOFF_WINDOW_INTERVALS ?? 60);
const WORKERS = Number(process.env.WORKERS ?? 64);
const HELPER_PROCESSES = Number(process.env.HELPER_PROCESSES ?? 2);
const LATENCY = Number(process.env.LATENCY ?? 0);
const TOKEN = 'bench-token';
const HELPER = join(__dirname, 'helpers/failing-helper.mjs');

const failing = (node: string): boolean => Number(/-(\d+)\./.exec(node)?.[1] ?? 0) % FAIL_EVERY === 0;
const FAILING_NODES = Math.floor(NODES / FAIL_EVERY);
const HEALTHY_NODES = NODES - FAILING_NODES;

interface RunResult {
  label: string;
  helperRuns: number;
  rpcAttempts: number;
  cycles: number;
  healthySeconds: number | null;
}

async function backoffRun(url: string, label: string, ceilingMs: number): Promise<RunResult> {
  const fleet = start([
    'simulate',
    '--nats',
    url,
    '--nodes',
    String(NODES),
    '--token',
    TOKEN,
    '--latency',
    `${LATENCY}ms`,
    '--restart-delay',
    '0',
    '--json',
    '--report-every',
    '0',
    '--log-level',
    'error',
  ]);
  await fleet.next((l) => l.type === 'ready');
  const config = requireValidConfig(
    parseProvisionerConfig(
      [
        `helper: ${HELPER}`,
        `token: ${TOKEN}`,
        'choria_insecure: true',
        `workers: ${WORKERS}`,
        `rxfleet: {nats_servers: [${url}], helper_mode: persistent, helper_processes: ${HELPER_PROCESSES}, queue_capacity: ${Math.max(50_000, NODES)}, failure_backoff: "${Math.round(ceilingMs / 1000)}s"}`,
      ].join('\n'),
    ),
  );
  const daemon = await startProvisioner({
    config,
    choria: parseChoriaClientConfig('identity = bench-backoff.example.net\n').config,
    registry: new Registry(),
    processMetrics: false,
    tuning: { intervalMs: INTERVAL_MS, helperEnv: { ...process.env, FAIL_EVERY: String(FAIL_EVERY) } },
  });
  const result: RunResult = { label, helperRuns: 0, rpcAttempts: 0, cycles: 0, healthySeconds: null };
  const started = now();
  let healthy = 0;
  const counting = daemon.cycles$.subscribe((record: CycleRecord) => {
    if (!failing(record.node)) {
      if (record.outcome === 'provisioned' && ++healthy === HEALTHY_NODES) result.healthySeconds = round((now() - started) / 1000);
      return;
    }
    result.cycles++;
    for (const step of record.steps) {
      if (step.step === 'helper') result.helperRuns++;
      result.rpcAttempts += step.attempts ?? 0;
    }
  });
  try {
    const windowMs = WINDOW_INTERVALS * INTERVAL_MS;
    while (now() - started < windowMs || (result.healthySeconds === null && now() - started < windowMs * 3)) await sleep(500);
  } finally {
    counting.unsubscribe();
    await daemon.stop({ graceMs: 0 });
    await stop(fleet);
  }
  return result;
}

async function main(): Promise<void> {
  printHeader(
    'bench/provisionBackoff.ts',
    [
      'BACKOFF_NODES',
      'BACKOFF_FAIL_EVERY',
      'BACKOFF_INTERVAL',
      'BACKOFF_CEILING_INTERVALS',
      'BACKOFF_WINDOW_INTERVALS',
      'WORKERS',
      'HELPER_PROCESSES',
      'LATENCY',
    ],
    {
      nodes: NODES,
      failing_nodes: FAILING_NODES,
      interval_ms: INTERVAL_MS,
      ceiling_intervals: CEILING_INTERVALS,
      window_intervals: WINDOW_INTERVALS,
      workers: WORKERS,
      helper_processes: HELPER_PROCESSES,
    },
  );
  const server = await startNatsServer({ jetstream: false });
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-bench-backoff-'));
  const cleanUp = async (): Promise<void> => {
    rmSync(dir, { recursive: true, force: true });
    await server.stop();
  };
  onInterrupt(cleanUp);
  try {
    const ceilingMs = CEILING_INTERVALS * INTERVAL_MS;
    const runs = [
      await backoffRun(server.url, "today's behaviour (failure_backoff: 0)", 0),
      await backoffRun(server.url, 'the backoff', ceilingMs),
    ];
    const windowHours = (WINDOW_INTERVALS * INTERVAL_MS) / 3_600_000;
    for (const [i, r] of runs.entries())
      print({
        figure: 'spent on the failing nodes, and the time to provision the healthy ones',
        run: r.label,
        failure_backoff_ms: i === 0 ? 0 : ceilingMs,
        window_intervals: WINDOW_INTERVALS,
        failing_nodes: FAILING_NODES,
        failing_cycles: r.cycles,
        helper_runs: r.helperRuns,
        rpc_attempts: r.rpcAttempts,
        helper_runs_per_hour: round(r.helperRuns / windowHours),
        rpc_attempts_per_hour: round(r.rpcAttempts / windowHours),
        // What the rule gives once the waits have grown: a try per node per round today, one per ceiling with the backoff.
        steady_helper_runs_per_hour: round(FAILING_NODES * (3_600_000 / (i === 0 ? INTERVAL_MS : ceilingMs))),
        healthy_nodes: HEALTHY_NODES,
        seconds_to_provision_healthy: r.healthySeconds,
      });
    const [today, backoff] = runs;
    print({
      figure: 'the backoff against today, same run',
      helper_runs_ratio: today.helperRuns > 0 ? round(backoff.helperRuns / today.helperRuns, 3) : null,
      rpc_attempts_ratio: today.rpcAttempts > 0 ? round(backoff.rpcAttempts / today.rpcAttempts, 3) : null,
      healthy_time_ratio:
        today.healthySeconds !== null && backoff.healthySeconds !== null ? round(backoff.healthySeconds / today.healthySeconds, 2) : null,
    });
  } finally {
    await cleanUp();
    printFooter();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
