import { Subscription } from 'rxjs';
export type { DemoTransport } from './demoTransport';
import { parseChoriaClientConfig } from '../lib/choria/clientConfig';
import { Logger, silentLogger } from '../lib/logger';
import { cleanUpOnExit } from '../streams/exitCleanup';
import { ProvisionerConfig, parseProvisionerConfig, requireValidConfig } from '../lib/provision/config/config';
import { ProvisionerDaemon, startProvisioner } from './provision/daemon';
import { sampleHelperPath } from './sampleHelpers';
import { SimulatedFleet, startSimulatedFleet } from '../streams/simulate/simulatedFleet';
import { FleetConnection } from '../streams/natsConnection';
import { DemoTransport, Transport, demoTransport } from './demoTransport';
import { definedFields } from '../lib/definedFields';

/** Options of `rxfleet demo`. */
export interface DemoOptions {
  nodes: number;
  workers: number;
  /** The fleet boots over this long, ms. */
  bootMs: number;
  transport: DemoTransport;
  /** Give up after this long, ms. */
  timeoutMs: number;
  /** The provisioners' logs. Default silent. */
  logger?: Logger;
  /** Ends the demo early (a signal): everything is stopped and the summary so far returned. */
  signal?: AbortSignal;
  /** The sample helper: the persistent one (default) or one process per node. */
  helperMode?: 'persistent' | 'per-node';
  /** Share the fleet through claims (rxfleet.mode: active-active) instead of electing a leader. */
  activeActive?: boolean;
  /** Where the progress bar and the summary go. */
  out: NodeJS.WriteStream | NodeJS.WritableStream;
  /** Draw the progress bar (a terminal); otherwise only the summary. Default: `out` is a TTY. */
  progress?: boolean;
}

/** What the demo did. */
export interface DemoSummary {
  transport: 'nats' | 'memory';
  nodes: number;
  provisioned: number;
  errors: number;
  duplicates: number;
  elapsedMs: number;
  nodesPerSecond: number;
  /** Who won the election, in order (a failover shows as two). */
  leaders: string[];
  /** Active-active: how many nodes each provisioner provisioned. */
  provisionedBy: Record<string, number>;
}

const IDENTITIES = ['demo-provisioner-a.example.net', 'demo-provisioner-b.example.net'];
const TOKEN = 'demo-token';

function bar(done: number, total: number, width = 30): string {
  const filled = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
}

/**
 * `rxfleet demo`: a private nats-server (JetStream on, the election bucket made as a Choria broker
 * makes it, and the claims bucket) or, without `nats-server`, an in-process transport; a simulated
 * fleet of Choria servers in provisioning mode booting over a few seconds; two provisioners that
 * elect a leader through the bucket (or, `activeActive`, share the fleet through claims) and run
 * the persistent sample helper (or the minimal one per node); a progress bar on a terminal; a summary. Everything it
 * started is stopped before it resolves.
 */
export async function runDemo(options: DemoOptions): Promise<DemoSummary> {
  const { nodes, workers, out } = options;
  const print = (text: string): void => void out.write(`${text}\n`);
  const logger: Logger = options.logger ?? silentLogger;
  const transport = await demoTransport(options.transport, logger, print);

  const connections: FleetConnection[] = [];
  const daemons: ProvisionerDaemon[] = [];
  // However the process ends short of the finally below (a second signal, a crash), no helper
  // outlives it; the private nats-server and its directory see to themselves.
  const forgetExitCleanup = cleanUpOnExit(() => {
    for (const daemon of daemons) daemon.abort('the process is exiting');
  });
  const tally = new DemoTally();
  let fleet: SimulatedFleet | undefined;
  const activeActive = options.activeActive === true;
  const persistent = (options.helperMode ?? 'persistent') === 'persistent';
  try {
    const fleetConnection = await transport.connect('rxfleet-demo-fleet');
    connections.push(fleetConnection);
    const config = demoConfig({ workers, activeActive, persistent });
    for (const identity of IDENTITIES) {
      const connection = await transport.connect(identity);
      connections.push(connection);
      const daemon = await startDemoProvisioner(transport, { identity, connection, config, logger });
      daemons.push(daemon);
      tally.watch(identity, daemon);
    }

    print(
      `rxfleet demo: ${nodes} simulated Choria servers booting over ${Number((options.bootMs / 1000).toFixed(1))} s, 2 provisioners ${activeActive ? 'sharing the fleet (active-active)' : 'electing a leader'}, ${persistent ? 'persistent helpers' : 'a helper per node'}, over ${transport.describe}`,
    );
    const started = Date.now();
    fleet = await startSimulatedFleet({
      nc: fleetConnection.nc,
      nodes,
      token: TOKEN,
      bootRate: options.bootMs > 0 ? Math.max(1, Math.ceil(nodes / (options.bootMs / 1000))) : 0,
      restartDelayMs: 200,
      logger,
    });
    const caption = (): string => (activeActive ? 'active-active' : `leader: ${tally.leaders.at(-1) ?? 'electing...'}`);
    const { complete, interrupted, elapsedMs } = await waitForFleet(fleet, options, started, caption);

    const summary = summarize(fleet, tally, { transport: transport.kind, nodes, elapsedMs });
    const cut = interrupted ? ' (interrupted)' : ` (gave up after ${Number((options.timeoutMs / 1000).toFixed(1))} s)`;
    printSummary(print, summary, { ended: complete ? '' : cut, activeActive });
    return summary;
  } finally {
    tally.stop();
    await Promise.all(daemons.map((d) => d.stop({ graceMs: 5000 })));
    await fleet?.stop();
    for (const connection of connections) await connection.drain();
    await transport.stop();
    forgetExitCleanup();
  }
}

/** The provisioners' configuration: the sample helper, and an election or (`activeActive`) claims on a plain JetStream server. */
function demoConfig({
  workers,
  activeActive,
  persistent,
}: {
  workers: number;
  activeActive: boolean;
  persistent: boolean;
}): ProvisionerConfig {
  return requireValidConfig(
    parseProvisionerConfig(
      [
        `workers: ${workers}`,
        'interval: 1m',
        `helper: ${JSON.stringify(sampleHelperPath(persistent ? 'persistent-helper' : 'minimal-helper'))}`,
        `token: ${TOKEN}`,
        'choria_insecure: true',
        'site: demo',
        `leader_election: ${!activeActive}`,
        'rxfleet:',
        // A plain JetStream server: no Choria account imports.
        '  election_api_prefix: $JS.API',
        '  claims_api_prefix: $JS.API',
        `  mode: ${activeActive ? 'active-active' : 'single'}`,
        `  helper_mode: ${persistent ? 'persistent' : 'per-node'}`,
        '  shutdown_grace: 5s',
      ].join('\n'),
    ),
  );
}

/** One of the two provisioners, on its own connection, with the transport's election and claims stores. */
function startDemoProvisioner(
  transport: Transport,
  parts: { identity: string; connection: FleetConnection; config: ProvisionerConfig; logger: Logger },
): Promise<ProvisionerDaemon> {
  const { identity, connection, config, logger } = parts;
  const store = transport.electionStore();
  const claimStore = transport.claimStore();
  return startProvisioner({
    config,
    choria: parseChoriaClientConfig(`identity = ${identity}\nplugin.choria.middleware_hosts = ${transport.url}\n`).config,
    connection,
    ...definedFields({ electionStore: store, claimStore }),
    logger: logger.child({ provisioner: identity }),
    processMetrics: false,
    tuning: { electionStartSplayMs: 300, helperEnv: { ...process.env, RXFLEET_HELPER_BROKERS: transport.url } },
  });
}

/** What the provisioners did, as the summary tells it: who won the election, in order; failed cycles; what each provisioned. */
class DemoTally {
  readonly leaders: string[] = [];
  readonly provisionedBy: Record<string, number> = {};
  errors = 0;
  private readonly watches: Subscription[] = [];

  watch(identity: string, daemon: ProvisionerDaemon): void {
    this.watches.push(daemon.election$.subscribe((event) => event === 'won' && this.leaders.push(identity)));
    this.watches.push(
      daemon.results$.subscribe(({ outcome }) => {
        if (outcome.status === 'failed') this.errors++;
        else if (outcome.status === 'done' && outcome.value === 'provisioned')
          this.provisionedBy[identity] = (this.provisionedBy[identity] ?? 0) + 1;
      }),
    );
  }

  stop(): void {
    for (const watch of this.watches) watch.unsubscribe();
  }
}

/**
 * Waits until the fleet is provisioned, the time is up, or the signal ends the demo, drawing the
 * progress bar (on a terminal) every 100 ms with `caption` beside it. `elapsedMs`: from `started`
 * to the end of the wait.
 */
async function waitForFleet(
  fleet: SimulatedFleet,
  options: DemoOptions,
  started: number,
  caption: () => string,
): Promise<{ complete: boolean; interrupted: boolean; elapsedMs: number }> {
  const { nodes, out } = options;
  const showProgress = options.progress ?? (out as NodeJS.WriteStream).isTTY === true;
  let progressTimer: NodeJS.Timeout | undefined;
  let interrupted = false;
  try {
    const finished = new Promise<boolean>((resolve) => {
      const onInterrupt = (): void => {
        interrupted = true;
        resolve(false);
      };
      if (options.signal?.aborted === true) onInterrupt();
      options.signal?.addEventListener('abort', onInterrupt, { once: true });
      const check = (): void => {
        const stats = fleet.stats();
        if (showProgress) out.write(`\r${bar(stats.provisioned, nodes)} ${stats.provisioned}/${nodes} provisioned  ${caption()}   `);
        if (stats.provisioned >= nodes) resolve(true);
        else if (Date.now() - started > options.timeoutMs) resolve(false);
      };
      progressTimer = setInterval(check, 100);
      check();
    });
    const complete = await finished;
    const elapsedMs = Date.now() - started;
    if (showProgress) out.write('\n');
    return { complete, interrupted, elapsedMs };
  } finally {
    clearInterval(progressTimer);
  }
}

/** What the demo did, from the fleet's count and the tally. */
function summarize(
  fleet: SimulatedFleet,
  tally: DemoTally,
  run: { transport: DemoSummary['transport']; nodes: number; elapsedMs: number },
): DemoSummary {
  const stats = fleet.stats();
  const { leaders, provisionedBy, errors } = tally;
  const { transport, nodes, elapsedMs } = run;
  return {
    transport,
    nodes,
    provisioned: stats.provisioned,
    errors,
    duplicates: stats.duplicates,
    elapsedMs,
    nodesPerSecond: stats.provisioned / (elapsedMs / 1000),
    leaders,
    provisionedBy,
  };
}

/** The summary's lines: the count (and why it ended short, `ended`), then the leaders or, active-active, who provisioned what. */
function printSummary(print: (text: string) => void, summary: DemoSummary, how: { ended: string; activeActive: boolean }): void {
  const { leaders, provisionedBy, nodes, elapsedMs } = summary;
  const standby = IDENTITIES.filter((id) => !leaders.includes(id));
  print(`nodes provisioned: ${summary.provisioned} of ${nodes}${how.ended}`);
  print(`errors:            ${summary.errors}`);
  print(`duplicates:        ${summary.duplicates}`);
  print(`time:              ${(elapsedMs / 1000).toFixed(1)} s`);
  print(`nodes/s:           ${summary.nodesPerSecond.toFixed(1)}`);
  if (how.activeActive) print(`provisioned by:    ${IDENTITIES.map((id) => `${id} ${provisionedBy[id] ?? 0}`).join(', ')}`);
  else
    print(
      `leader:            ${leaders.length === 0 ? 'nobody won the election' : leaders.join(', then ')}${standby.length > 0 ? ` (${standby.join(', ')} stood by)` : ''}`,
    );
}
