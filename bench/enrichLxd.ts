/**
 * `npm run bench:enrich:lxd` (and the end of `npm run bench:enrich`): `rxfleet enrich` against a
 * real Incus daemon and then a real LXD daemon (private ones, started by the spec harness; needs
 * root, incus and lxd), publishing to a private nats-server. One line of JSON per figure and
 * daemon (`daemon: incus|lxd`), marked `machine_busy` when the machine was busy at the start:
 *
 * - time from `lxc launch` to the enriched `instance-started` arriving on NATS, over RUNS launches
 *   (min, median, max), beside the baseline measured in the same launches: the time LXD itself
 *   takes from `lxc launch` to the instance having its IPv4 address, as its own state reports it
 *   (polled every 20 ms over the same socket), which no enricher can beat;
 * - the difference per launch (what the enricher and NATS add to LXD's own time).
 *
 * A first launch (which unpacks the image) is made and not counted. Each launch's instance is
 * deleted, and its delete seen on NATS, before the next, so every run meets the same fleet.
 *
 * Environment: RUNS (default 9).
 */
import { Registry } from 'prom-client';
import { IncusApiError } from '../lib/incus/api';
import { defaultEnricherSettings } from '../lib/enricher/config/config';
import { startEnrichDaemon } from '../bin/enrich/daemon';
import { EventPayload } from '../lib/enricher/output/payload';
import { IncusRestClient } from '../streams/incus/incusRestClient';
import { openNatsConnection } from '../streams/natsConnection';
import { startNatsServer } from '../streams/natsServerProcess';
import { DAEMON_KINDS, DaemonKind, TestDaemon, daemonSpecsUnavailable, startTestDaemon, uniqueName } from '../spec/helpers/testDaemon';
import { benchOutput } from './machineLoad';

const RUNS = Number(process.env.RUNS ?? 9);
const now = (): number => performance.now();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function summary(values: number[]): { min_ms: number; median_ms: number; max_ms: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const median =
    sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  return { min_ms: Math.round(sorted[0]), median_ms: Math.round(median), max_ms: Math.round(sorted[sorted.length - 1]) };
}

/** Resolves with the time the instance's state first shows a global IPv4 address. */
async function ipv4Seen(client: IncusRestClient, name: string, deadlineMs = 60_000): Promise<number> {
  const deadline = now() + deadlineMs;
  while (now() < deadline) {
    try {
      const state = await client.getInstanceState('default', name);
      const found = Object.values(state.network ?? {}).some((nic) =>
        nic.addresses.some((a) => a.family === 'inet' && a.scope === 'global'),
      );
      if (found) return now();
    } catch (error) {
      // Not created yet: the launch is still on its way.
      if (!(error instanceof IncusApiError && error.notFound)) throw error;
    }
    await sleep(20);
  }
  throw new Error(`${name} got no IPv4 address within ${deadlineMs} ms`);
}

async function main(): Promise<void> {
  const out = benchOutput('enrich-lxd');
  try {
    // The same figures on each daemon, one after the other (never both at once: they would share the cores).
    for (const kind of DAEMON_KINDS) await measure(kind, out.print.bind(out));
  } finally {
    out.end();
  }
}

async function measure(kind: DaemonKind, print: (figure: Record<string, unknown>) => void): Promise<void> {
  const launch = kind === 'incus' ? 'incus launch' : 'lxc launch';
  const unavailable = daemonSpecsUnavailable(kind);
  if (unavailable !== undefined) {
    print({ figure: `${launch} to enriched instance-started on NATS`, daemon: kind, skipped: unavailable });
    return;
  }
  const lxd: TestDaemon = await startTestDaemon(kind);
  const nats = await startNatsServer({ jetstream: false });
  const seen = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const listener = await openNatsConnection({ servers: [nats.url], name: 'bench' });
  listener.nc.subscribe('incus.events.default.instance.>', {
    callback: (_error, msg) => {
      const payload = JSON.parse(msg.string()) as EventPayload;
      const key = `${payload.action} ${payload.name}`;
      if (payload.action === 'instance-started' && payload.instance?.interfaces.some((i) => i.ipv4.length > 0) !== true) return;
      seen.set(key, now());
      waiters.get(key)?.();
    },
  });
  await listener.nc.flush();
  const arrival = (action: string, name: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const key = `${action} ${name}`;
      const timer = setTimeout(() => reject(new Error(`no ${key} on NATS`)), 60_000);
      const done = (): void => {
        clearTimeout(timer);
        resolve(seen.get(key) as number);
      };
      if (seen.has(key)) done();
      else waiters.set(key, done);
    });

  const daemon = await startEnrichDaemon(
    defaultEnricherSettings({
      incus: { url: lxd.socket },
      http: undefined,
      storeFile: undefined,
      outputs: { stdout: false, nats: { servers: [nats.url], subjectPrefix: 'incus.events', name: 'bench', maxHeld: 1000 } },
    }),
    { registry: new Registry() },
  );
  const client = new IncusRestClient({ endpoint: { url: lxd.socket } });
  try {
    while (!daemon.ready()) await sleep(20);
    const enriched: number[] = [];
    const leased: number[] = [];
    const added: number[] = [];
    for (let run = 0; run <= RUNS; run++) {
      const name = uniqueName('bench');
      const t0 = now();
      const [, ipAt, natsAt] = await Promise.all([lxd.launch(name), ipv4Seen(client, name), arrival('instance-started', name)]);
      if (run > 0) {
        enriched.push(natsAt - t0);
        leased.push(ipAt - t0);
        added.push(natsAt - ipAt);
      }
      await lxd.deleteInstance(name);
      await arrival('instance-deleted', name);
    }
    print({
      figure: `${launch} to enriched instance-started on NATS`,
      daemon: kind,
      runs: RUNS,
      unit: 'ms',
      ...summary(enriched),
      baseline: `${launch} to the IPv4 address in ${lxd.title}'s own instance state (polled every 20 ms)`,
      baseline_ms: summary(leased),
    });
    print({
      figure: `enriched instance-started on NATS after ${lxd.title} shows the IPv4`,
      daemon: kind,
      runs: RUNS,
      unit: 'ms',
      ...summary(added),
      note: "the enricher polls a started instance's state every 150 ms",
    });
  } finally {
    client.close();
    await daemon.stop();
    await listener.drain();
    await nats.stop();
    await lxd.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
