import { ignoreElements, of } from 'rxjs';
import { AdmissionLedger } from '@rxfleet/operators';
import { ProvisionCycle, ProvisionCycleOptions } from '../../lib/provision/cycle/provisionCycle';
import { Sighting } from '../../lib/provision/sightings/sighting';
import { nodeSiteFiles } from '../../streams/siteFiles';
import { ActiveActive } from './activeActive';
import { announceStartup, startChoriaClient } from './choriaClient';
import { connectToBrokers } from './connect';
import { DaemonSetting, ProvisionerDaemon, ProvisionerDaemonOptions, daemonSetting } from './daemonTypes';
import { FleetSharing, shareFleet } from './fleetSharing';
import { ProvisionerGauges, provisionerGauges } from './gauges';
import { gracefulStop } from './gracefulStop';
import { ProvisionerHealth } from './health';
import { startHelper } from './helperSetup';
import { pipelineHooks } from './pipelineHooks';
import { startRecords } from './records';
import { RunPipelineConfig, RunningPipeline, runPipeline } from './runningPipeline';
import { Sightings, sightings } from './sightings';

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
  const setting = daemonSetting(options);
  const { config, identity, logger, registry } = setting;
  const gauges = provisionerGauges(setting, options.processMetrics !== false);
  const { metrics, gate, ledger, backoff, traces } = gauges;
  const health = new ProvisionerHealth(setting, gauges, options.companion);
  const monitor = await health.serve();

  logStart(setting);
  const given = options.connection;
  const broker = await connectToBrokers(config, setting.choria, { logger, registry, given }).catch((error: unknown) =>
    closeInOrder([monitor, gauges]).then(() => Promise.reject(error)),
  );
  health.broker = broker;
  const { nc, state$: connection$ } = broker.connection;
  announceStartup(nc, identity, setting.version, logger);
  const wire = startChoriaClient({ ...setting, nc, plan: broker.plan, connection$, metrics });
  const { client, badMessages } = wire;
  const helpers = startHelper(config, { gate, metrics, registry, logger, env: setting.tuning.helperEnv });
  const { electionStore, claimStore, incusEvents } = options;
  const sharing = shareFleet(setting, { nc, gate, electionMetrics: gauges.electionMetrics, electionStore, claimStore });
  health.sharing = sharing;
  const { election, activeActive } = sharing;
  const cycle = provisionCycle(setting, { client, helper: helpers.helper, gate, metrics, traces, activeActive });
  const records = startRecords(setting, { nc, metrics, traces, backoff, activeActive, status: health.status });
  const onBusy = (n: number): void => void (health.busyWorkers = n);
  const pipeline = runPipeline({
    ...pipelineSetting(setting, gauges, sharing),
    ...sightings({ ...setting, nc, client, badMessages, connection$, activeActive, incusEvents, metrics }),
    provision: (ticket, hardStop) => cycle.outcome(ticket, hardStop),
    hooks: records.hooks(pipelineHooks({ metrics, logger, queueCapacity: config.rxfleet.queueCapacity, onBusy })),
    onFailure: () => void stop({ graceMs: 0 }),
  });
  // Closed in this order once no cycle runs.
  const parts = [activeActive, helpers, pipeline, records, election, wire, gauges, monitor, broker];
  const { stop, stopped } = provisionerStop(setting, { health, ledger, pipeline, teardown: parts });

  return {
    identity,
    registry,
    metrics,
    gate,
    ledger,
    port: monitor?.port,
    status: health.status,
    ready: health.ready,
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

/**
 * The provisioning cycle with the daemon's parts: the site's files, the RPC client, the helper and
 * the traces; in active-active an RPC attempt waits for its node's claim to be confirmed (P20).
 */
function provisionCycle(
  setting: DaemonSetting,
  parts: Pick<ProvisionCycleOptions, 'client' | 'helper' | 'gate' | 'metrics' | 'traces'> & { activeActive: ActiveActive | undefined },
): ProvisionCycle {
  const { config, scheduler, logger, tuning } = setting;
  const { activeActive, ...given } = parts;
  return new ProvisionCycle({
    ...given,
    files: nodeSiteFiles,
    config,
    scheduler,
    logger,
    rpcTimeoutMs: tuning.rpcTimeoutMs,
    backoffMs: tuning.retryBackoffMs,
    random: tuning.random,
    beforeAttempt: activeActive === undefined ? undefined : (node: string) => activeActive.claims.attemptReady?.(node) ?? of(undefined),
  });
}

/**
 * What the pipeline takes from the setting and the shared state: its pace, sizes and clock, the
 * gate and the ledger, and the stages around a cycle (the backoff, the claims, the election).
 */
function pipelineSetting(
  setting: DaemonSetting,
  gauges: ProvisionerGauges,
  sharing: FleetSharing,
): Omit<RunPipelineConfig, keyof Sightings | 'provision' | 'hooks' | 'onFailure'> {
  const { config, intervalMs, tuning, scheduler, logger } = setting;
  const { gate, ledger, backoff } = gauges;
  const { election, activeActive } = sharing;
  return {
    interval: intervalMs,
    workers: config.workers,
    queueCapacity: config.rxfleet.queueCapacity,
    settleMs: tuning.settleMs,
    lockHoldMs: tuning.lockHoldMs,
    scheduler,
    logger,
    gate,
    ledger,
    backoff,
    claims: activeActive?.claims,
    won: election?.won$,
    lost: election?.lost$,
  };
}

/**
 * P9 for this daemon: the sources stop (the queued nodes dropped: a worker skips them, and the next
 * instance or run finds them again), the cycles in flight finish within `shutdown_grace`, then
 * `teardown` closes each part in order, and the state says `stopped`.
 */
function provisionerStop(
  setting: DaemonSetting,
  parts: {
    health: ProvisionerHealth;
    ledger: AdmissionLedger<Sighting, string>;
    pipeline: RunningPipeline;
    teardown: ReadonlyArray<Part | undefined>;
  },
): ReturnType<typeof gracefulStop> {
  const { health, ledger, pipeline } = parts;
  return gracefulStop({
    logger: setting.logger,
    graceMs: setting.config.rxfleet.shutdownGraceMs,
    inFlight: () => health.busyWorkers,
    stopSources: () => {
      health.state = 'stopping';
      pipeline.stopSources();
      ledger.reset();
    },
    abort: (reason) => pipeline.abort(reason),
    pipelineDone: pipeline.done,
    teardown: async () => {
      await closeInOrder(parts.teardown);
      health.state = 'stopped';
    },
    failure: pipeline.failure,
  });
}

/** The first line, as upstream's: which file, and how this instance runs. */
function logStart({ config, identity, intervalMs, logger }: DaemonSetting): void {
  const { workers, leaderElection } = config;
  const { mode, helperMode } = config.rxfleet;
  logger.info(
    { config: config.file, intervalMs, workers, identity, leaderElection, mode, helperMode },
    `Choria Provisioner starting using configuration file ${config.file ?? '(none)'}`,
  );
}

/** A part of the daemon that is closed (or stopped) when it stops. */
type Part = { close(): unknown } | { stop(): unknown };

/** Closes (or stops) each part in turn, waiting for each; an undefined one is a part that was never started. */
async function closeInOrder(parts: ReadonlyArray<Part | undefined>): Promise<void> {
  for (const part of parts) {
    if (part === undefined) continue;
    await ('close' in part ? part.close() : part.stop());
  }
}
