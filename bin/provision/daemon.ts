import { Registry } from 'prom-client';
import { asyncScheduler, ignoreElements, of } from 'rxjs';
import { Logger, silentLogger } from '../../lib/logger';
import { CycleTraces } from '../../lib/provision/cycle/cycleTrace';
import { NodeBackoff } from '../../lib/provision/backoff/nodeBackoff';
import { ProvisionCycle } from '../../lib/provision/cycle/provisionCycle';
import { nodeSiteFiles } from '../../streams/siteFiles';
import { serveDaemonEndpoint } from '../daemon/endpoint';
import { ActiveActive, startActiveActive } from './activeActive';
import { announceStartup, startChoriaClient } from './choriaClient';
import { BrokerConnection, connectToBrokers } from './connect';
import { ProvisionerDaemon, ProvisionerDaemonOptions, ProvisionerStatus } from './daemonTypes';
import { Election, startElection } from './election';
import { provisionerGauges } from './gauges';
import { gracefulStop } from './gracefulStop';
import { startHelper } from './helperSetup';
import { pipelineHooks } from './pipelineHooks';
import { startRecords } from './records';
import { runPipeline } from './runningPipeline';
import { sightings } from './sightings';

export { ELECTION_KEY, PROVISIONER_COMPONENT } from './daemonTypes';
export type { ProvisionerStatus, DaemonTuning, ProvisionerDaemon, ProvisionerDaemonOptions } from './daemonTypes';

/**
 * Starts `rxfleet provision`: the design card's pipeline with its real parts, in the daemon contract
 * (`bin/daemon/contract.ts`). In order: the metrics (every series at zero), the pause gate (closed
 * first with leader_election until won, and in active-active until the claims bucket is read), the
 * monitor endpoint, the broker connection, the startup event, the RPC client, the helper, the
 * provisioning cycle, the election or active-active's claims, and the pipeline.
 *
 * Guarantees:
 * - With leader_election nothing is discovered, admitted or sent until the election is won; `won`
 *   resumes and discovers at once; `lost` pauses (in-flight RPCs stop at the attempt boundary, the
 *   helper is not started) and resets the admission ledger. Election set-up failures are retried,
 *   logged and counted (P8).
 * - Gauges follow the ledger (P4): `waiting_nodes` = identities held, `work_queue_entries` =
 *   admitted and not started; `busy_workers` and `paused` follow the pool and the gate.
 * - A pipeline that errors (a bug: every cycle and discovery failure is a value) stops the daemon,
 *   and `stopped` says why, so its process exits 1 and a supervisor restarts it.
 * - Secrets (token, passwords, keys) are never logged.
 */
export async function startProvisioner(options: ProvisionerDaemonOptions): Promise<ProvisionerDaemon> {
  const { config, choria, companion, tuning = {} } = options;
  const logger = options.logger ?? silentLogger;
  const registry = options.registry ?? new Registry();
  const scheduler = tuning.scheduler ?? asyncScheduler;
  const identity = choria.identity;
  const intervalMs = tuning.intervalMs ?? config.intervalMs;
  const processMetrics = options.processMetrics !== false;
  const activeActiveOn = config.rxfleet.mode === 'active-active';
  const { metrics, electionMetrics, gate, ledger, ...gauges } = provisionerGauges(config, {
    registry,
    identity,
    intervalMs,
    scheduler,
    processMetrics,
  });

  // P22: a failing node waits longer and longer before it is admitted again; 0 turns it off.
  const backoff =
    config.rxfleet.failureBackoffMs > 0
      ? new NodeBackoff({ baseMs: intervalMs, ceilingMs: config.rxfleet.failureBackoffMs, onSize: (n) => metrics.setBackoffNodes(n) })
      : undefined;
  // P21: each cycle's steps, for its record.
  const traces = new CycleTraces(() => scheduler.now());

  let state: ProvisionerStatus['state'] = 'running';
  let busyWorkers = 0;
  let broker: BrokerConnection | undefined;
  let election: Election | undefined;
  let activeActive: ActiveActive | undefined;
  const ready = (): boolean =>
    state === 'running' &&
    broker?.connection.state === 'connected' &&
    (election?.ready() ?? !config.leaderElection) &&
    (activeActive?.ready() ?? true) &&
    (companion?.ready() ?? true);
  const status = (): ProvisionerStatus => ({
    state,
    connection: broker?.connection.state ?? 'disconnected',
    paused: gate.paused,
    leader: election?.leads() ?? false,
    electionReady: election?.ready() ?? false,
    busyWorkers,
    held: ledger.held,
    queued: ledger.queued,
    failing: backoff?.failing ?? 0,
  });
  const describe = () => (companion === undefined ? status() : { ...status(), [companion.name]: companion.status() });
  const port = tuning.monitorPort ?? (config.monitorPort > 0 ? config.monitorPort : undefined);
  const address = port === undefined ? undefined : { port, host: config.rxfleet.monitorHost };
  const login = () => broker?.watch?.problem();
  const monitor = address && (await serveDaemonEndpoint({ address, registry, ready, status: describe, login, logger }));

  logStart(config, identity, intervalMs, logger);
  try {
    broker = await connectToBrokers(config, choria, { logger, registry, given: options.connection });
  } catch (error) {
    await monitor?.close();
    gauges.close();
    throw error;
  }
  const { connection, plan } = broker;
  const { nc, state$: connection$ } = connection;
  announceStartup(nc, identity, options.version ?? '0.0.0', logger);
  const wire = startChoriaClient({ nc, plan, choria, identity, connection$, metrics, registry, scheduler, logger });
  const { client, badMessages } = wire;
  const helpers = startHelper(config, { gate, metrics, registry, logger, env: tuning.helperEnv });
  const { rpcTimeoutMs, retryBackoffMs: backoffMs, random } = tuning;
  const cycle = new ProvisionCycle({
    files: nodeSiteFiles,
    config,
    client,
    helper: helpers.helper,
    gate,
    metrics,
    scheduler,
    logger,
    rpcTimeoutMs,
    backoffMs,
    random,
    traces,
    // Active-active: an RPC attempt waits for its node's claim to be confirmed (P20).
    beforeAttempt: activeActiveOn ? (node: string) => activeActive?.claims.attemptReady?.(node) ?? of(undefined) : undefined,
  });
  if (electionMetrics !== undefined) {
    const { electionApiPrefix: apiPrefix, electionCandidateIntervalMs: maxCandidateIntervalMs } = config.rxfleet;
    const store = options.electionStore;
    election = startElection({
      identity,
      nc,
      store,
      apiPrefix,
      maxCandidateIntervalMs,
      gate,
      metrics: electionMetrics,
      logger,
      scheduler,
      tuning,
    });
  }
  if (activeActiveOn) {
    const { claimsSetupRetryMs: setupRetryMs } = tuning;
    const store = options.claimStore;
    activeActive = startActiveActive({ config, identity, nc, gate, registry, logger, scheduler, intervalMs, store, setupRetryMs, random });
  }

  const records = startRecords({
    config,
    identity,
    version: options.version ?? '0.0.0',
    nc,
    metrics,
    logger,
    scheduler,
    traces,
    backoff,
    claimRevision: activeActive === undefined ? undefined : (node) => activeActive?.claimRevision(node),
    status,
    everyMs: tuning.instanceRecordEveryMs,
  });

  const { incusEvents } = options;
  const capacity = config.rxfleet.queueCapacity;
  const pipeline = runPipeline({
    ...sightings({ config, nc, client, badMessages, connection$, activeActive, incusEvents, metrics, logger, scheduler, tuning }),
    claims: activeActive?.claims,
    won: election?.won$,
    lost: election?.lost$,
    gate,
    backoff,
    provision: (ticket, hardStop) => cycle.outcome(ticket, hardStop),
    interval: intervalMs,
    workers: config.workers,
    queueCapacity: capacity,
    settleMs: tuning.settleMs,
    lockHoldMs: tuning.lockHoldMs,
    hooks: records.hooks(pipelineHooks({ metrics, logger, queueCapacity: capacity, onBusy: (n) => (busyWorkers = n) })),
    scheduler,
    ledger,
    logger,
    onFailure: () => void stop({ graceMs: 0 }),
  });

  const { stop, stopped } = gracefulStop({
    logger,
    graceMs: config.rxfleet.shutdownGraceMs,
    inFlight: () => busyWorkers,
    stopSources: () => {
      state = 'stopping';
      pipeline.stopSources();
      // Queued nodes are dropped (a worker skips them); the next instance or run rediscovers them.
      ledger.reset();
    },
    abort: (reason) => pipeline.abort(reason),
    pipelineDone: pipeline.done,
    teardown: async () => {
      activeActive?.stop();
      await helpers.close();
      pipeline.close();
      await records.close();
      election?.stop();
      wire.close();
      gauges.close();
      await monitor?.close();
      await broker?.close();
      state = 'stopped';
    },
    failure: pipeline.failure,
  });

  return {
    identity,
    registry,
    metrics,
    gate,
    ledger,
    port: monitor?.port,
    status,
    ready,
    stop,
    stopped,
    results$: pipeline.results$,
    cycles$: records.cycles$,
    // Without leader_election: nothing, completing with the results when the daemon stops.
    election$: election?.events$ ?? pipeline.results$.pipe(ignoreElements()),
    abort: (reason = 'aborted') => {
      pipeline.abort(new Error(reason));
      helpers.kill();
    },
  };
}

/** The first line, as upstream's: which file, and how this instance runs. */
function logStart(config: ProvisionerDaemonOptions['config'], identity: string, intervalMs: number, logger: Logger): void {
  const { workers, leaderElection } = config;
  const { mode, helperMode } = config.rxfleet;
  logger.info(
    { config: config.file, intervalMs, workers, identity, leaderElection, mode, helperMode },
    `Choria Provisioner starting using configuration file ${config.file ?? '(none)'}`,
  );
}
