/**
 * `npm run bench:incus-feed`: the Incus feed end to end on a real Incus daemon, then on a real
 * LXD daemon (private ones, started by the spec harness; needs root, incus and lxd), each figure
 * once per daemon (`daemon: incus|lxd`). `rxfleet provision-incus`'s wiring in this
 * process (the enricher reading LXD, handing its events to the provisioner without NATS), a
 * private nats-server, and a simulated Choria server answering for the identity each instance
 * maps to (`{name}.example.net`), started before the launch and never announced by a startup
 * event that is listened for; discovery runs only at start. One line of JSON per figure:
 *
 * - `lxc launch` to the provisioner's first RPC to that identity (what the simulated server
 *   receives first), over RUNS launches (min, median, max);
 * - beside the baseline measured in the same launches: `lxc launch` to the instance having its
 *   IPv4 address, as LXD's own state reports it (polled every 20 ms over its socket), which no
 *   sighting can beat;
 * - the difference per launch (what the enricher, the feed, admission and the cycle's first step
 *   add to LXD's own time).
 *
 * A first launch (which unpacks the image) is made and not counted. Each instance is deleted
 * before the next launch. Environment: RUNS (default 7).
 */
import { Registry } from 'prom-client';
import { parseChoriaClientConfig } from '../lib/choria/clientConfig';
import { defaultEnricherSettings } from '../lib/enricher/config/config';
import { IncusApiError } from '../lib/incus/api';
import { parseProvisionerConfig, requireValidConfig } from '../lib/provision/config/config';
import { startProvisionerWithEnricher } from '../bin/provision/withEnricher';
import { IncusRestClient } from '../streams/incus/incusRestClient';
import { openNatsConnection } from '../streams/natsConnection';
import { startNatsServer } from '../streams/natsServerProcess';
import { startSimulatedFleet } from '../streams/simulate/simulatedFleet';
import { DAEMON_KINDS, DaemonKind, daemonSpecsUnavailable, startTestDaemon, uniqueName } from '../spec/helpers/testDaemon';
import { benchOutput } from './machineLoad';

const RUNS = Number(process.env.RUNS ?? 7);
const TOKEN = 'bench-token';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function summary(values: number[]): { min_ms: number; median_ms: number; max_ms: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const median =
    sorted.length % 2 === 1 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  return { min_ms: Math.round(sorted[0]), median_ms: Math.round(median), max_ms: Math.round(sorted[sorted.length - 1]) };
}

/** The time (Date.now) the instance's state first shows a global IPv4 address. */
async function ipv4Seen(client: IncusRestClient, name: string, deadlineMs = 60_000): Promise<number> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    try {
      const state = await client.getInstanceState('default', name);
      if (Object.values(state.network ?? {}).some((nic) => nic.addresses.some((a) => a.family === 'inet' && a.scope === 'global')))
        return Date.now();
    } catch (error) {
      // Not created yet: the launch is still on its way.
      if (!(error instanceof IncusApiError && error.notFound)) throw error;
    }
    await sleep(20);
  }
  throw new Error(`${name} got no IPv4 address within ${deadlineMs} ms`);
}

async function main(): Promise<void> {
  const out = benchOutput('incus-feed');
  try {
    // The same figures on each daemon, one after the other (never both at once: they would share the cores).
    for (const kind of DAEMON_KINDS) await measure(kind, out);
  } finally {
    out.end();
  }
}

async function measure(kind: DaemonKind, out: ReturnType<typeof benchOutput>): Promise<void> {
  const launch = kind === 'incus' ? 'incus launch' : 'lxc launch';
  const unavailable = daemonSpecsUnavailable(kind);
  if (unavailable !== undefined) {
    out.print({ figure: `${launch} to the first RPC to its identity`, daemon: kind, skipped: unavailable });
    return;
  }
  const lxd = await startTestDaemon(kind);
  const nats = await startNatsServer({ jetstream: false });
  const client = new IncusRestClient({ endpoint: { url: lxd.socket } });
  const names = Array.from({ length: RUNS + 1 }, () => uniqueName('bf'));
  const firstRpc = new Map<string, number>();
  const fleetConnection = await openNatsConnection({ servers: [nats.url], name: 'bench-fleet' });
  const config = requireValidConfig(
    parseProvisionerConfig(
      [
        'interval: 1h',
        'helper: /bin/true',
        `token: ${TOKEN}`,
        'choria_insecure: true',
        `rxfleet: {nats_servers: ["${nats.url}"], incus: {identity: "{name}.example.net"}}`,
      ].join('\n'),
    ),
  );
  const registry = new Registry();
  const rounds = async (): Promise<number> =>
    (await registry.getSingleMetric('choria_provisioner_discover_cycles')?.get())?.values.reduce((sum, v) => sum + v.value, 0) ?? 0;
  const daemon = await startProvisionerWithEnricher(
    { config, choria: parseChoriaClientConfig('identity = bench.example.net\n').config, registry, processMetrics: false },
    defaultEnricherSettings({ incus: { url: lxd.socket }, http: undefined, storeFile: undefined }),
  );
  try {
    // Discovery at start would find the simulated servers: they start once it has run.
    while (!daemon.ready() || (await rounds()) < 1) await sleep(50);
    const answering = await startSimulatedFleet({
      nc: fleetConnection.nc,
      nodes: names.length,
      identity: (i) => `${names[i - 1]}.example.net`, // i counts from 1
      component: 'bench_unheard',
      token: TOKEN,
      onRequest: (r) => {
        if (r.agent !== 'discovery' && !firstRpc.has(r.identity)) firstRpc.set(r.identity, Date.now());
      },
    });
    const toAddress: number[] = [];
    const toRpc: number[] = [];
    const added: number[] = [];
    for (const [run, name] of names.entries()) {
      const identity = `${name}.example.net`;
      const started = Date.now();
      const [addressAt] = await Promise.all([ipv4Seen(client, name), lxd.launch(name)]);
      while (!firstRpc.has(identity) && Date.now() - started < 60_000) await sleep(10);
      const rpcAt = firstRpc.get(identity);
      if (rpcAt === undefined) throw new Error(`no RPC to ${identity} within 60 s of ${launch}`);
      if (run > 0) {
        toAddress.push(addressAt - started);
        toRpc.push(rpcAt - started);
        added.push(rpcAt - addressAt);
      }
      await lxd.deleteInstance(name);
    }
    out.print({
      figure: `${launch} to the provisioner's first RPC to its identity (provision-incus)`,
      daemon: kind,
      runs: RUNS,
      ...summary(toRpc),
      baseline: { figure: `${launch} to the instance's IPv4 address (${lxd.title}'s own state)`, ...summary(toAddress) },
    });
    out.print({
      figure: `added beyond ${lxd.title}'s own address time (enricher, feed, admission, first RPC)`,
      daemon: kind,
      runs: RUNS,
      ...summary(added),
    });
    await answering.stop();
  } finally {
    await daemon.stop({ graceMs: 1000 });
    await fleetConnection.drain();
    client.close();
    await nats.stop();
    await lxd.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
