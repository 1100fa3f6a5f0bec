/**
 * `npm run bench:provision`: `rxfleet provision` (the built command, as a user runs it)
 * provisioning a fleet run by `rxfleet simulate` (another process, as a real fleet would be) over
 * a private nats-server, features none (inventory, helper, configure, restart per node). One JSON
 * line per figure, each beside the limit it is bound by, measured in the same run:
 *
 * - a helper per node (`per-node-sh`: `bench/helpers/sh-helper.sh`, the minimal helper's answer in
 *   POSIX sh): beside the helper-start limit, the daemon's own `HelperRunner` starting the same
 *   helper with as many at once as the daemon has workers, and the machine's own, a bare `spawn`
 *   and exit of the same script as many at once;
 * - the persistent helper (`persistent-sh`: `examples/helpers/persistent-helper.sh`): beside the
 *   NATS request/reply limit with 64 in flight, divided by the three RPCs of a cycle, and the
 *   persistent helper's own round trips with the same processes;
 *
 * and for each: nodes per second from the daemon's first /ready to its `provisioned` counter
 * reaching the fleet size, the daemon's CPU per node and peak RSS, its RSS as the run goes (at 10,
 * 50, 90 and 100 % provisioned: flat once the fleet is admitted), failed cycles by step, and the
 * fleet's own count of provisioned nodes and duplicates. The load average at the start and end and
 * the exact command come first and last.
 *
 * NODES (default 10000,50000,100000), HELPERS (per-node-sh,persistent-sh; also per-node-node and
 * persistent-node, the Node.js samples), WORKERS (64), LATENCY (ms per reply, 0),
 * HELPER_PROCESSES (0: the daemon's default), LIMIT_SECONDS (3), RUN_TIMEOUT_MINUTES (60) change
 * the run; RECORDS=1 runs the daemon with its provisioning records on (`rxfleet.records`, P21: a
 * JetStream stream on the same server, made by the daemon), to see what writing them costs beside a
 * run without; DAEMON_NODE_ARGS passes flags to the daemon's node. PROFILE=cpu,heap runs the daemon under `node --cpu-prof --heap-prof` and prints where
 * its CPU went and what its heap held (PROFILE_DIR keeps the profiles; default a temporary
 * directory, removed).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sampleHelperPath } from '../bin/sampleHelpers';
import { freePort, startNatsServer } from '../streams/natsServerProcess';
import { waitFor } from '../spec/helpers/waitFor';
import {
  bareSpawnLimit,
  failures,
  helperStartLimit,
  metric,
  natsLimits,
  now,
  onInterrupt,
  persistentHelperLimit,
  print,
  printFooter,
  printHeader,
  processUsage,
  round,
  sleep,
  start,
  stop,
} from './provisionHarness';
import { profiles, summariseCpuProfile, summariseHeapProfile } from './profileSummary';

const NODES = (process.env.NODES ?? '10000,50000,100000').split(',').map(Number);
const HELPERS = (process.env.HELPERS ?? 'per-node-sh,persistent-sh').split(',');
const WORKERS = Number(process.env.WORKERS ?? 64);
const LATENCY = Number(process.env.LATENCY ?? 0);
const HELPER_PROCESSES = Number(process.env.HELPER_PROCESSES ?? 0);
const LIMIT_SECONDS = Number(process.env.LIMIT_SECONDS ?? 3);
const RUN_TIMEOUT_MS = Number(process.env.RUN_TIMEOUT_MINUTES ?? 60) * 60_000;
const PROFILE = (process.env.PROFILE ?? '').split(',').filter((p) => p === 'cpu' || p === 'heap');
const RECORDS = process.env.RECORDS === '1';
/** Flags for the daemon's node (`--max-old-space-size=128`), to see what the runtime's settings change. */
const DAEMON_NODE_ARGS = (process.env.DAEMON_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
const TOKEN = 'bench-token';
/** RPCs in a cycle with no feature on: inventory, configure, restart. */
const RPCS_PER_CYCLE = 3;

const HELPER_COMMANDS: Record<string, { mode: 'per-node' | 'persistent'; command: string }> = {
  'per-node-sh': { mode: 'per-node', command: join(__dirname, 'helpers/sh-helper.sh') },
  'per-node-node': { mode: 'per-node', command: sampleHelperPath('minimal-helper') },
  'persistent-sh': { mode: 'persistent', command: sampleHelperPath('persistent-helper.sh') },
  'persistent-node': { mode: 'persistent', command: sampleHelperPath('persistent-helper') },
};

/** The daemon's own default: the worker count, at most one per CPU. */
const helperProcesses = (): number => (HELPER_PROCESSES > 0 ? HELPER_PROCESSES : Math.max(1, Math.min(WORKERS, availableParallelism())));

interface Run {
  nodes: number;
  helper: string;
}

async function provisionRun(url: string, brokerPid: number, dir: string, run: Run, limits: Record<string, number>): Promise<void> {
  const helper = HELPER_COMMANDS[run.helper];
  const fleet = start([
    'simulate',
    '--nats',
    url,
    '--nodes',
    String(run.nodes),
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

  const port = await freePort();
  const name = `provision-${run.nodes}-${run.helper}`;
  const config = join(dir, `${name}.yaml`);
  const rxfleet = [
    `helper_mode: ${helper.mode}`,
    `queue_capacity: ${Math.max(50_000, run.nodes)}`,
    ...(helper.mode === 'persistent' ? [`helper_processes: ${helperProcesses()}`] : []),
    ...(RECORDS ? ['records: true', 'records_create: true', 'records_api_prefix: $JS.API'] : []),
  ];
  writeFileSync(
    config,
    [
      `helper: ${helper.command}`,
      `token: ${TOKEN}`,
      'choria_insecure: true',
      `workers: ${WORKERS}`,
      `monitor_port: ${port}`,
      'loglevel: error',
      'interval: 1m',
      `rxfleet: {${rxfleet.join(', ')}}`,
    ].join('\n'),
  );
  const choria = join(dir, 'choria.cfg');
  writeFileSync(choria, `identity = bench-provisioner.example.net\nplugin.choria.middleware_hosts = ${url}\n`);
  const profileDir = PROFILE.length > 0 ? (process.env.PROFILE_DIR ?? join(dir, 'profiles', name)) : undefined;
  const nodeArgs =
    profileDir === undefined
      ? [...DAEMON_NODE_ARGS]
      : [
          ...DAEMON_NODE_ARGS,
          ...(PROFILE.includes('cpu') ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
          ...(PROFILE.includes('heap') ? ['--heap-prof', `--heap-prof-dir=${profileDir}`] : []),
        ];
  const daemon = start(['provision', '--config', config, '--choria-config', choria], nodeArgs);
  try {
    await waitFor(
      async () => {
        if (!daemon.running()) throw new Error(`the daemon exited before it was ready: ${daemon.stderr().slice(-500)}`);
        return (
          (await fetch(`http://127.0.0.1:${port}/ready`).then(
            (r) => r.status,
            () => 0,
          )) === 200
        );
      },
      'the daemon to be ready',
      60_000,
    );
    const pid = daemon.child.pid as number;
    const before = processUsage(pid);
    // Where the rest of the machine goes: the fleet's and the broker's CPU over the same run.
    const fleetBefore = processUsage(fleet.child.pid as number);
    const brokerBefore = processUsage(brokerPid);
    const started = now();
    let provisioned = 0;
    const rssAt: Record<string, number> = {};
    while (provisioned < run.nodes && now() - started < RUN_TIMEOUT_MS) {
      await sleep(500);
      const value = await metric(port, 'choria_provisioner_provisioned');
      if (!Number.isNaN(value)) provisioned = value;
      const { rssMiB } = processUsage(pid);
      for (const percent of [10, 50, 90, 100]) if (provisioned >= (run.nodes * percent) / 100) rssAt[`${percent}%`] ??= rssMiB;
    }
    const seconds = (now() - started) / 1000;
    const after = processUsage(pid);
    const fleetAfter = processUsage(fleet.child.pid as number);
    const brokerAfter = processUsage(brokerPid);
    const perNode = (from: { cpuSeconds: number }, to: { cpuSeconds: number }): number | null =>
      provisioned > 0 ? round(((to.cpuSeconds - from.cpuSeconds) / provisioned) * 1000, 2) : null;
    const errors = await metric(port, 'choria_provisioner_provision_errors');
    // The fleet's own count: a node configured twice is a duplicate, whatever the daemon believes.
    await stop(fleet);
    const fleetSummary = await fleet.next((l) => l.type === 'summary').catch(() => ({}) as Record<string, unknown>);
    const rate = provisioned / seconds;
    const limit =
      helper.mode === 'per-node'
        ? limits[`helper_start_limit_${run.helper}`]
        : Math.min(limits.request_reply_per_second_64_in_flight / RPCS_PER_CYCLE, limits[`persistent_helper_limit_${run.helper}`]);
    const { byStep, examples } = failures(daemon.lines);
    print({
      figure: 'nodes provisioned per second',
      nodes: run.nodes,
      helper: run.helper,
      helper_mode: helper.mode,
      records: RECORDS,
      workers: WORKERS,
      rpc_latency_ms: LATENCY,
      provisioned,
      finished: provisioned >= run.nodes,
      seconds: round(seconds),
      nodes_per_second: round(rate),
      limit:
        helper.mode === 'per-node'
          ? 'helper starts/s, as many at once as workers'
          : 'min(NATS request/reply with 64 in flight / 3 RPCs per cycle, persistent helper round trips/s)',
      limit_per_second: round(limit),
      ratio_to_limit: round(rate / limit, 2),
      ...(helper.mode === 'per-node'
        ? {
            bare_spawn_per_second: limits[`bare_spawn_limit_${run.helper}`],
            ratio_to_bare_spawn: round(rate / limits[`bare_spawn_limit_${run.helper}`], 2),
            helper_start_ratio_to_bare_spawn: round(
              limits[`helper_start_limit_${run.helper}`] / limits[`bare_spawn_limit_${run.helper}`],
              2,
            ),
          }
        : {}),
      cpu_ms_per_node: perNode(before, after),
      write_calls_per_node: provisioned > 0 ? round((after.writeCalls - before.writeCalls) / provisioned, 2) : null,
      read_calls_per_node: provisioned > 0 ? round((after.readCalls - before.readCalls) / provisioned, 2) : null,
      fleet_cpu_ms_per_node: perNode(fleetBefore, fleetAfter),
      broker_cpu_ms_per_node: perNode(brokerBefore, brokerAfter),
      peak_rss_mib: after.peakRssMiB,
      rss_mib_when_provisioned: rssAt,
      provision_errors: errors,
      failures_by_step: byStep,
      failure_examples: examples,
      fleet_provisioned: fleetSummary.provisioned,
      fleet_duplicates: fleetSummary.duplicates,
    });
  } finally {
    await stop(daemon);
    await stop(fleet);
  }
  if (profileDir !== undefined) printProfiles(profileDir, name);
}

function printProfiles(dir: string, run: string): void {
  for (const path of profiles(dir, '.cpuprofile'))
    print({
      figure: 'daemon CPU profile (self time)',
      run,
      profile: process.env.PROFILE_DIR === undefined ? undefined : path,
      ...summariseCpuProfile(path),
    });
  for (const path of profiles(dir, '.heapprofile'))
    print({
      figure: 'daemon heap profile at exit (sampled, self size)',
      run,
      profile: process.env.PROFILE_DIR === undefined ? undefined : path,
      ...summariseHeapProfile(path),
    });
}

async function main(): Promise<void> {
  printHeader(
    'bench/provision.ts',
    [
      'NODES',
      'HELPERS',
      'WORKERS',
      'LATENCY',
      'HELPER_PROCESSES',
      'LIMIT_SECONDS',
      'RUN_TIMEOUT_MINUTES',
      'PROFILE',
      'PROFILE_DIR',
      'DAEMON_NODE_ARGS',
      'RECORDS',
    ],
    {
      nodes: NODES,
      helpers: HELPERS,
      workers: WORKERS,
      rpc_latency_ms: LATENCY,
      helper_processes: helperProcesses(),
    },
  );
  for (const helper of HELPERS)
    if (HELPER_COMMANDS[helper] === undefined)
      throw new Error(`unknown helper ${helper}: one of ${Object.keys(HELPER_COMMANDS).join(', ')}`);
  const server = await startNatsServer({ jetstream: RECORDS });
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-bench-provision-'));
  const cleanUp = async (): Promise<void> => {
    rmSync(dir, { recursive: true, force: true });
    await server.stop();
  };
  onInterrupt(cleanUp);
  try {
    const limits: Record<string, number> = { ...(await natsLimits(server.url, LIMIT_SECONDS)) };
    for (const helper of HELPERS) {
      const { mode, command } = HELPER_COMMANDS[helper];
      if (mode === 'per-node') {
        limits[`bare_spawn_limit_${helper}`] = await bareSpawnLimit(command, WORKERS, LIMIT_SECONDS);
        limits[`helper_start_limit_${helper}`] = await helperStartLimit(command, WORKERS, LIMIT_SECONDS);
      } else limits[`persistent_helper_limit_${helper}`] = await persistentHelperLimit(command, helperProcesses(), 64, LIMIT_SECONDS);
    }
    print({ figure: 'limits, measured in this run', ...limits });
    for (const nodes of NODES) for (const helper of HELPERS) await provisionRun(server.url, server.pid, dir, { nodes, helper }, limits);
  } finally {
    await cleanUp();
    printFooter();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
