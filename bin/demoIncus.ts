import { Registry } from 'prom-client';
import { Subscription } from 'rxjs';
import { parseChoriaClientConfig } from '../lib/choria/clientConfig';
import { defaultEnricherSettings } from '../lib/enricher/config/config';
import { Logger, silentLogger } from '../lib/logger';
import { parseProvisionerConfig, requireValidConfig } from '../lib/provision/config/config';
import { cleanUpOnExit } from '../streams/exitCleanup';
import { DaemonKind, daemonProgram, daemonUnavailable, preferredDaemonKind } from '../streams/incus/daemonKind';
import { PrivateDaemon, startPrivateDaemon } from '../streams/incus/privateDaemon';
import { FleetConnection } from '../streams/natsConnection';
import { SimulatedFleet, startSimulatedFleet } from '../streams/simulate/simulatedFleet';
import { DemoTransport, Transport, demoTransport } from './demoTransport';
import { ProvisionerWithEnricher, startProvisionerWithEnricher } from './provision/withEnricher';
import { sampleHelperPath } from './sampleHelpers';

/** Options of `rxfleet demo --incus`. */
export interface IncusDemoOptions {
  /** Instances to launch. */
  instances: number;
  /** The daemon to start: Incus or LXD; by default Incus when it can run here, else LXD. */
  daemon?: DaemonKind;
  transport: DemoTransport;
  /** Give up after this long, ms. */
  timeoutMs: number;
  logger?: Logger;
  /** Ends the demo early (a signal): everything is stopped and the summary so far returned. */
  signal?: AbortSignal;
  /** Where the lines and the summary go. */
  out: NodeJS.WritableStream;
  /** Where the one line saying why it cannot run goes. */
  err: NodeJS.WritableStream;
}

/** What `rxfleet demo --incus` did; `unavailable` when it could not start a private Incus or LXD daemon. */
export interface IncusDemoSummary {
  unavailable?: string;
  instances: number;
  provisioned: number;
  /** How the provisioned nodes were found, by sighting source. */
  foundBy: { incus: number; discovery: number; event: number };
  errors: number;
  duplicates: number;
  /** The daemon it ran on. */
  daemon: DaemonKind;
  /** `incus launch` (`lxc launch`) to provisioned, per node, ms. */
  launchToProvisionedMs: number[];
}

const TOKEN = 'demo-token';
const identityOf = (name: string): string => `${name}.example.net`;
/** The name of the instance at `index` (from 0). */
const instanceName = (index: number): string => `demo-incus-${index + 1}`;

/** The value of a counter of the provisioner's registry (one site, so one series). */
async function counter(registry: Registry, name: string): Promise<number> {
  const metric = registry.getSingleMetric(name);
  return metric === undefined ? 0 : (await metric.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/**
 * `rxfleet demo --incus`: the provisioner and the enricher in one process (`rxfleet
 * provision-incus`) on a private Incus daemon (LXD when Incus cannot run here, or when `daemon` says so). It launches `instances` busybox instances labelled
 * `user.choria=provision`; the enricher sees each come up with an address and the provisioner
 * sights `<instance>.example.net` at once (`rxfleet.incus`: the label as selector, the identity
 * template `{name}.example.net`). The busybox image runs no Choria server, so simulated servers
 * answer for those identities, started before the instances; discovery runs only at start (before
 * they answer, `interval` is an hour) and their startup events go to a component nobody listens
 * to, so every node the demo provisions was found through its instance.
 *
 * When no private daemon of that kind can be started here (not root, the daemon missing) it writes one line
 * saying why to `err` and resolves with `unavailable` set, having started nothing. Everything it
 * started (instances, the daemon, its bridge and directory, the nats-server) is stopped before it
 * resolves; an exit short of that (a second signal, a crash) still removes them.
 */
export async function runIncusDemo(options: IncusDemoOptions): Promise<IncusDemoSummary> {
  const { instances, out } = options;
  const print = (text: string): void => void out.write(`${text}\n`);
  const logger = options.logger ?? silentLogger;
  const kind = options.daemon ?? preferredDaemonKind();
  const program = daemonProgram(kind);
  const summary = nothingYet(instances, kind);
  const unavailable = daemonUnavailable(kind);
  if (unavailable !== undefined) {
    options.err.write(`rxfleet demo --incus: cannot run: ${unavailable}; rxfleet demo without --incus needs neither\n`);
    return { ...summary, unavailable };
  }

  let transport: Transport | undefined;
  let host: PrivateDaemon | undefined;
  let daemon: ProvisionerWithEnricher | undefined;
  let fleet: SimulatedFleet | undefined;
  const connections: FleetConnection[] = [];
  const watches: Subscription[] = [];
  const forgetExitCleanup = cleanUpOnExit(() => daemon?.abort('the process is exiting'));
  const interrupted = (): boolean => options.signal?.aborted === true;
  try {
    transport = await demoTransport(options.transport, logger, print);
    print(
      `rxfleet demo --incus: ${instances} ${program.title} instance${instances === 1 ? '' : 's'} on a private ${program.title} daemon, the enricher and the provisioner in one process (provision-incus), over ${transport.kind === 'nats' ? `a private nats-server (${transport.url})` : 'the in-process transport'}`,
    );
    print(`starting a private ${program.title} daemon and building its busybox image...`);
    host = await startPrivateDaemon(kind);
    if (interrupted()) return summary;

    const registry = new Registry();
    const connection = await transport.connect('demo-provisioner.example.net');
    connections.push(connection);
    daemon = await startDemoPipeline(transport, { connection, registry, logger, socket: host.socket });
    const running = daemon;
    const provisionedAt = new Map<string, number>();
    watches.push(tallyResults(running, summary, provisionedAt));
    const deadline = Date.now() + options.timeoutMs;
    const until = (done: () => boolean | Promise<boolean>): Promise<boolean> =>
      pollUntil(done, () => !interrupted() && Date.now() < deadline);
    // The discovery round at start and the enricher's first look at the daemon, before anything answers.
    if (!(await until(async () => running.ready() && (await counter(registry, 'choria_provisioner_discover_cycles')) >= 1))) return summary;

    const fleetConnection = await transport.connect('rxfleet-demo-fleet');
    connections.push(fleetConnection);
    fleet = await startSimulatedFleet({
      nc: fleetConnection.nc,
      nodes: instances,
      identity: (i) => identityOf(instanceName(i - 1)),
      component: 'demo_unheard',
      token: TOKEN,
      restartDelayMs: 200,
      logger,
    });
    const launchedAt = await launchInstances(host, instances, (name) => print(`${program.client} launch ${name}: running`));
    const sinceLaunch = (identity: string, at: number): number => at - (launchedAt.get(identity) ?? at);
    const report = newlyProvisioned(provisionedAt);
    const complete = await until(() => {
      for (const [identity, at] of report())
        print(`${identity}: provisioned ${(sinceLaunch(identity, at) / 1000).toFixed(1)} s after ${program.client} launch`);
      return (fleet?.stats().provisioned ?? 0) >= instances;
    });
    const stats = fleet.stats();
    summary.provisioned = stats.provisioned;
    summary.duplicates = stats.duplicates;
    summary.launchToProvisionedMs = [...provisionedAt].map(([identity, at]) => sinceLaunch(identity, at));
    const cut = interrupted() ? ' (interrupted)' : ` (gave up after ${Number((options.timeoutMs / 1000).toFixed(1))} s)`;
    printSummary(print, summary, complete ? '' : cut);
    return summary;
  } finally {
    for (const watch of watches) watch.unsubscribe();
    await daemon?.stop({ graceMs: 5000 });
    await fleet?.stop();
    for (const connection of connections) await connection.drain();
    try {
      // Its instances stop with it.
      await host?.stop();
    } finally {
      await transport?.stop();
      forgetExitCleanup();
    }
  }
}

/**
 * The provisioner and the enricher in one process (`rxfleet provision-incus`), on the private
 * daemon's socket. Discovery runs once, at start: what the demo provisions, its instances sighted
 * (the label `user.choria=provision` as selector, the identity template `{name}.example.net`).
 */
function startDemoPipeline(
  transport: Transport,
  parts: { connection: FleetConnection; registry: Registry; logger: Logger; socket: string },
): Promise<ProvisionerWithEnricher> {
  const { connection, registry, logger, socket } = parts;
  const config = requireValidConfig(
    parseProvisionerConfig(
      [
        'workers: 4',
        // Discovery runs once, at start: what the demo provisions, its instances sighted.
        'interval: 1h',
        `helper: ${JSON.stringify(sampleHelperPath('persistent-helper'))}`,
        `token: ${TOKEN}`,
        'choria_insecure: true',
        'site: demo-incus',
        'rxfleet:',
        '  helper_mode: persistent',
        '  shutdown_grace: 5s',
        '  incus:',
        '    instances: user.choria=provision',
        '    identity: "{name}.example.net"',
      ].join('\n'),
    ),
  );
  return startProvisionerWithEnricher(
    {
      config,
      choria: parseChoriaClientConfig(`identity = demo-provisioner.example.net\nplugin.choria.middleware_hosts = ${transport.url}\n`)
        .config,
      connection,
      registry,
      logger,
      processMetrics: false,
      tuning: { helperEnv: { ...process.env, RXFLEET_HELPER_BROKERS: transport.url } },
    },
    defaultEnricherSettings({ incus: { url: socket }, http: undefined, storeFile: undefined }),
  );
}

/** Counts each cycle's result into the summary: failures, and how each provisioned node was found (and when, in `provisionedAt`). */
function tallyResults(daemon: ProvisionerWithEnricher, summary: IncusDemoSummary, provisionedAt: Map<string, number>): Subscription {
  return daemon.results$.subscribe(({ ticket, outcome }) => {
    if (outcome.status === 'failed') summary.errors++;
    else if (outcome.status === 'done' && outcome.value === 'provisioned') {
      provisionedAt.set(ticket.key, Date.now());
      summary.foundBy[ticket.value.via]++;
    }
  });
}

/** The summary before anything ran. */
function nothingYet(instances: number, kind: DaemonKind): IncusDemoSummary {
  return {
    instances,
    daemon: kind,
    provisioned: 0,
    foundBy: { incus: 0, discovery: 0, event: 0 },
    errors: 0,
    duplicates: 0,
    launchToProvisionedMs: [],
  };
}

/** The nodes provisioned since the last call (each once, in the order they were), with when. */
function newlyProvisioned(provisionedAt: ReadonlyMap<string, number>): () => Array<[string, number]> {
  const reported = new Set<string>();
  return () => {
    const fresh: Array<[string, number]> = [];
    for (const [identity, at] of provisionedAt) {
      if (reported.has(identity)) continue;
      reported.add(identity);
      fresh.push([identity, at]);
    }
    return fresh;
  };
}

/** Asks `done` every 100 ms while `going` says so; true once `done` is. */
async function pollUntil(done: () => boolean | Promise<boolean>, going: () => boolean): Promise<boolean> {
  while (going()) {
    if (await done()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/** Launches the demo's instances at once, labelled for provisioning; when each launch began, by the identity it is sighted as. */
async function launchInstances(host: PrivateDaemon, instances: number, onRunning: (name: string) => void): Promise<Map<string, number>> {
  const launchedAt = new Map<string, number>();
  await Promise.all(
    Array.from({ length: instances }, async (_, i) => {
      const name = instanceName(i);
      launchedAt.set(identityOf(name), Date.now());
      await host.launch(name, { 'user.choria': 'provision' });
      onRunning(name);
    }),
  );
  return launchedAt;
}

/** The summary's lines; `ended`: why the count ended short, if it did. */
function printSummary(print: (text: string) => void, summary: IncusDemoSummary, ended: string): void {
  print(`nodes provisioned: ${summary.provisioned} of ${summary.instances}${ended}`);
  print(
    `found by:          Incus ${summary.foundBy.incus}, discovery ${summary.foundBy.discovery}, startup events ${summary.foundBy.event}`,
  );
  print(`errors:            ${summary.errors}`);
  print(`duplicates:        ${summary.duplicates}`);
}
