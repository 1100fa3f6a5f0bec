/**
 * `npm run bench:enrich` (part): the JetStream output against the core NATS output, in the same
 * run, on a private nats-server (JetStream on, file storage): `rxfleet enrich` in-process over a
 * fake Incus of INSTANCES instances (default 10,000) answering in LATENCY_MS (default 1) per call.
 *
 * - events per second through the daemon, a burst of one changed instance each: with the core
 *   NATS output (until a subscriber has every event), with the JetStream output (until the stream
 *   has acknowledged every event), and with the JetStream output and the state bucket (until the
 *   bucket holds every record too); the JetStream figures beside the core one (goal: 0.8x);
 * - the publish acknowledgement's latency, first send to acknowledgement, p50 and p99: in the
 *   burst (256 awaiting an acknowledgement at once, queueing included), and one event at a time.
 *
 * Outputs alternate, ROUNDS (default 3) runs each after one of each not counted (the JIT's),
 * medians reported; each run has a daemon, a stream and a bucket of its own. The load average is printed at the start and the end.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { Registry } from 'prom-client';
import { Subject } from 'rxjs';
import { benchOutput } from './machineLoad';
import { IncusStreamItem } from '../lib/incus/api';
import { EnricherSettings, defaultEnricherSettings, parseEnricherConfig } from '../lib/enricher/config/config';
import { EnrichDaemon, startEnrichDaemon } from '../bin/enrich/daemon';
import { FleetConnection, openNatsConnection } from '../streams/natsConnection';
import { startNatsServer } from '../streams/natsServerProcess';
import { FakeIncus } from '../spec/helpers/FakeIncus';

const INSTANCES = Number(process.env.INSTANCES ?? 10_000);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 1);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const SEQUENTIAL = Math.min(Number(process.env.SEQUENTIAL ?? 1000), INSTANCES);

type Output = 'core' | 'jetstream' | 'jetstream+state';

const output = benchOutput('bench/enrichJetStream.ts');
const print = (line: Record<string, unknown>): void => output.print(line);
const now = (): number => performance.now();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const round = (n: number, digits = 3): number => +n.toFixed(digits);
const name = (i: number): string => `c${i}`;

function world(): FakeIncus {
  const fake = new FakeIncus({ latency: LATENCY_MS });
  fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/16', 'ipv6.address': 'none' } });
  for (let i = 0; i < INSTANCES; i++)
    fake.createInstance('default', name(i), { network: 'br0' }).start('default', name(i), `10.0.${Math.floor(i / 250)}.${(i % 250) + 2}`);
  return fake;
}

async function counter(registry: Registry, output: Output): Promise<number> {
  const metric = registry.getSingleMetric('enricher_published_total');
  const values = (await metric?.get())?.values ?? [];
  const wanted = output === 'core' ? 'nats' : 'jetstream';
  return values.find((v) => v.labels.output === wanted && v.labels.result === 'sent')?.value ?? 0;
}

/** One daemon with one output, on a fake world; the burst and the one-at-a-time latencies. */
async function run(
  fake: FakeIncus,
  url: string,
  admin: FleetConnection,
  out: Output,
  n: number,
): Promise<{ perSecond: number; acks: number[] }> {
  const stream = `BENCH_${n}`;
  const bucket = `BENCH_STATE_${n}`;
  const prefix = `bench${n}.events`;
  const parsed = parseEnricherConfig({
    outputs:
      out === 'core'
        ? { nats: { url, subject_prefix: prefix, max_held: INSTANCES } }
        : {
            jetstream: { url, create: true, stream, subject_prefix: prefix, max_held: INSTANCES },
            ...(out === 'jetstream+state' ? { state: { create: true, bucket } } : {}),
          },
  }).settings;
  const settings: EnricherSettings = defaultEnricherSettings({
    storeFile: undefined,
    http: undefined,
    readDelay: 0,
    sweepInterval: 3_600_000,
    ipTimeout: 2000,
    outputs: parsed.outputs,
  });
  let delivered = 0;
  const subscription = out === 'core' ? admin.nc.subscribe(`${prefix}.>`, { callback: () => void delivered++ }) : undefined;
  await admin.nc.flush();
  const acks: number[] = [];
  let measuring = false;
  const registry = new Registry();
  const events = new Subject<IncusStreamItem>();
  const daemon: EnrichDaemon = await startEnrichDaemon(settings, {
    reader: fake.asPromiseReader(),
    events$: events,
    registry,
    onAck: (s) => measuring && acks.push(s * 1000),
  });
  const done = async (count: number): Promise<boolean> => {
    if (out === 'core') return delivered >= count;
    if ((await counter(registry, out)) < count) return false;
    return out === 'jetstream' || daemon.status().jetstreamHeld === 0;
  };
  const waitFor = async (count: number): Promise<void> => {
    while (!(await done(count))) await sleep(2);
  };
  while (daemon.status().role !== 'active') await sleep(10);
  events.next({ kind: 'connected' });
  await waitFor(INSTANCES);
  const statePending = async (): Promise<number> =>
    (await registry.getSingleMetric('enricher_state_pending')?.get())?.values[0]?.value ?? 0;
  while (out === 'jetstream+state' && (await statePending()) > 0) await sleep(5);

  measuring = true;
  const start = now();
  for (let i = 0; i < INSTANCES; i++) {
    fake.configure('default', name(i), { 'user.v': String(n) });
    events.next(fake.event('instance-updated', 'default', name(i)));
  }
  await waitFor(2 * INSTANCES);
  while (out === 'jetstream+state' && (await statePending()) > 0) await sleep(2);
  const ms = now() - start;
  measuring = false;

  // One at a time: the next change only once the last is acknowledged.
  const single: number[] = [];
  if (out === 'jetstream') {
    measuring = true;
    await sleep(400);
    for (let i = 0; i < SEQUENTIAL; i++) {
      const before = acks.length;
      fake.configure('default', name(i), { 'user.v': `s${n}-${i}` });
      events.next(fake.event('instance-updated', 'default', name(i)));
      while (acks.length === before) await sleep(0);
      single.push(acks[acks.length - 1]);
    }
    measuring = false;
    acks.splice(acks.length - SEQUENTIAL, SEQUENTIAL);
  }
  await daemon.stop();
  subscription?.unsubscribe();
  if (out !== 'core') {
    const jsm = await jetstreamManager(admin.nc);
    await jsm.streams.delete(stream).catch(() => undefined);
    if (out === 'jetstream+state') await jsm.streams.delete(`KV_${bucket}`).catch(() => undefined);
  }
  return { perSecond: (INSTANCES / ms) * 1000, acks: out === 'jetstream' ? [...acks, ...single.map((s) => -s)] : acks };
}

async function main(): Promise<void> {
  print({ node: process.version, instances: INSTANCES, latency_ms_per_call: LATENCY_MS, rounds: ROUNDS });
  const server = await startNatsServer({ jetstream: true });
  const admin = await openNatsConnection({ servers: [server.url], name: 'bench-admin' });
  try {
    const fake = world();
    const results: Record<Output, number[]> = { core: [], jetstream: [], 'jetstream+state': [] };
    let burstAcks: number[] = [];
    let singleAcks: number[] = [];
    let n = 0;
    // A run of each first, not counted: the first run of a process pays for its JIT.
    for (const out of ['core', 'jetstream'] as const) await run(fake, server.url, admin, out, n++);
    for (let r = 0; r < ROUNDS; r++) {
      for (const out of ['core', 'jetstream', 'jetstream+state'] as const) {
        const result = await run(fake, server.url, admin, out, n++);
        results[out].push(result.perSecond);
        if (out === 'jetstream') {
          burstAcks = burstAcks.concat(result.acks.filter((a) => a >= 0));
          singleAcks = singleAcks.concat(result.acks.filter((a) => a < 0).map((a) => -a));
        }
      }
    }
    const core = median(results.core);
    print({
      figure: 'events per second through the daemon, core NATS output',
      events: INSTANCES,
      events_per_s: Math.round(core),
      runs_events_per_s: results.core.map(Math.round),
    });
    for (const out of ['jetstream', 'jetstream+state'] as const) {
      const ours = median(results[out]);
      print({
        figure: `events per second through the daemon, ${out === 'jetstream' ? 'JetStream output' : 'JetStream output and state bucket'}`,
        events: INSTANCES,
        events_per_s: Math.round(ours),
        runs_events_per_s: results[out].map(Math.round),
        baseline: 'the core NATS output, same run',
        baseline_events_per_s: Math.round(core),
        ratio: round(ours / core, 2),
        goal_ratio: 0.8,
      });
    }
    burstAcks.sort((a, b) => a - b);
    singleAcks.sort((a, b) => a - b);
    print({
      figure: 'publish acknowledgement latency in the burst (up to 256 awaiting at once, queueing included)',
      acks: burstAcks.length,
      p50_ms: round(percentile(burstAcks, 50)),
      p99_ms: round(percentile(burstAcks, 99)),
    });
    print({
      figure: 'publish acknowledgement latency, one event at a time',
      acks: singleAcks.length,
      p50_ms: round(percentile(singleAcks, 50)),
      p99_ms: round(percentile(singleAcks, 99)),
    });
  } finally {
    await admin.drain();
    await server.stop();
    output.end();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
