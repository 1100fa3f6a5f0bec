import { Subscription } from 'rxjs';
export type { DemoTransport } from './demoTransport';
import { parseChoriaClientConfig } from '../lib/choria/clientConfig';
import { Logger, silentLogger } from '../lib/logger';
import { cleanUpOnExit } from '../streams/exitCleanup';
import { parseProvisionerConfig, requireValidConfig } from '../lib/provision/config/config';
import { ProvisionerDaemon, startProvisioner } from './provision/daemon';
import { sampleHelperPath } from './sampleHelpers';
import { SimulatedFleet, startSimulatedFleet } from '../streams/simulate/simulatedFleet';
import { FleetConnection } from '../streams/natsConnection';
import { DemoTransport, demoTransport } from './demoTransport';
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
  const showProgress = options.progress ?? (out as NodeJS.WriteStream).isTTY === true;

  const transport = await demoTransport(options.transport, logger, print);
  const kind = transport.kind;

  const connections: FleetConnection[] = [];
  const daemons: ProvisionerDaemon[] = [];
  // However the process ends short of the finally below (a second signal, a crash), no helper
  // outlives it; the private nats-server and its directory see to themselves.
  const forgetExitCleanup = cleanUpOnExit(() => {
    for (const daemon of daemons) daemon.abort('the process is exiting');
  });
  const watches: Subscription[] = [];
  let fleet: SimulatedFleet | undefined;
  let progressTimer: NodeJS.Timeout | undefined;
  const leaders: string[] = [];
  const provisionedBy: Record<string, number> = {};
  const activeActive = options.activeActive === true;
  const persistent = (options.helperMode ?? 'persistent') === 'persistent';
  let errors = 0;
  try {
    const token = 'demo-token';
    const fleetConnection = await transport.connect('rxfleet-demo-fleet');
    connections.push(fleetConnection);
    const config = requireValidConfig(
      parseProvisionerConfig(
        [
          `workers: ${workers}`,
          'interval: 1m',
          `helper: ${JSON.stringify(sampleHelperPath(persistent ? 'persistent-helper' : 'minimal-helper'))}`,
          `token: ${token}`,
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

    for (const identity of IDENTITIES) {
      const connection = await transport.connect(identity);
      connections.push(connection);
      const store = transport.electionStore();
      const claimStore = transport.claimStore();
      const daemon = await startProvisioner({
        config,
        choria: parseChoriaClientConfig(`identity = ${identity}\nplugin.choria.middleware_hosts = ${transport.url}\n`).config,
        connection,
        ...definedFields({ electionStore: store, claimStore }),
        logger: logger.child({ provisioner: identity }),
        processMetrics: false,
        tuning: { electionStartSplayMs: 300, helperEnv: { ...process.env, RXFLEET_HELPER_BROKERS: transport.url } },
      });
      daemons.push(daemon);
      watches.push(daemon.election$.subscribe((event) => event === 'won' && leaders.push(identity)));
      watches.push(
        daemon.results$.subscribe(({ outcome }) => {
          if (outcome.status === 'failed') errors++;
          else if (outcome.status === 'done' && outcome.value === 'provisioned')
            provisionedBy[identity] = (provisionedBy[identity] ?? 0) + 1;
        }),
      );
    }

    print(
      `rxfleet demo: ${nodes} simulated Choria servers booting over ${Number((options.bootMs / 1000).toFixed(1))} s, 2 provisioners ${activeActive ? 'sharing the fleet (active-active)' : 'electing a leader'}, ${persistent ? 'persistent helpers' : 'a helper per node'}, over ${transport.describe}`,
    );
    const started = Date.now();
    fleet = await startSimulatedFleet({
      nc: fleetConnection.nc,
      nodes,
      token,
      bootRate: options.bootMs > 0 ? Math.max(1, Math.ceil(nodes / (options.bootMs / 1000))) : 0,
      restartDelayMs: 200,
      logger,
    });
    const running = fleet;

    let interrupted = false;
    const finished = new Promise<boolean>((resolve) => {
      const onInterrupt = (): void => {
        interrupted = true;
        resolve(false);
      };
      if (options.signal?.aborted === true) onInterrupt();
      options.signal?.addEventListener('abort', onInterrupt, { once: true });
      const check = (): void => {
        const stats = running.stats();
        if (showProgress) {
          const leader = activeActive ? 'active-active' : (leaders.at(-1) ?? 'electing...');
          out.write(
            `\r${bar(stats.provisioned, nodes)} ${stats.provisioned}/${nodes} provisioned  ${activeActive ? '' : 'leader: '}${leader}   `,
          );
        }
        if (stats.provisioned >= nodes) resolve(true);
        else if (Date.now() - started > options.timeoutMs) resolve(false);
      };
      progressTimer = setInterval(check, 100);
      check();
    });
    const complete = await finished;
    const elapsedMs = Date.now() - started;
    if (showProgress) out.write('\n');
    clearInterval(progressTimer);
    progressTimer = undefined;

    const stats = running.stats();
    const summary: DemoSummary = {
      transport: kind,
      nodes,
      provisioned: stats.provisioned,
      errors,
      duplicates: stats.duplicates,
      elapsedMs,
      nodesPerSecond: stats.provisioned / (elapsedMs / 1000),
      leaders,
      provisionedBy,
    };
    const standby = IDENTITIES.filter((id) => !leaders.includes(id));
    const cut = interrupted ? ' (interrupted)' : ` (gave up after ${Number((options.timeoutMs / 1000).toFixed(1))} s)`;
    print(`nodes provisioned: ${summary.provisioned} of ${nodes}${complete ? '' : cut}`);
    print(`errors:            ${summary.errors}`);
    print(`duplicates:        ${summary.duplicates}`);
    print(`time:              ${(elapsedMs / 1000).toFixed(1)} s`);
    print(`nodes/s:           ${summary.nodesPerSecond.toFixed(1)}`);
    if (activeActive) print(`provisioned by:    ${IDENTITIES.map((id) => `${id} ${provisionedBy[id] ?? 0}`).join(', ')}`);
    else
      print(
        `leader:            ${leaders.length === 0 ? 'nobody won the election' : leaders.join(', then ')}${standby.length > 0 ? ` (${standby.join(', ')} stood by)` : ''}`,
      );
    return summary;
  } finally {
    if (progressTimer !== undefined) clearInterval(progressTimer);
    for (const watch of watches) watch.unsubscribe();
    await Promise.all(daemons.map((d) => d.stop({ graceMs: 5000 })));
    await fleet?.stop();
    for (const connection of connections) await connection.drain();
    await transport.stop();
    forgetExitCleanup();
  }
}
