/* eslint-disable max-lines -- one 330-line function until the daemon contract of issue 20 splits it; the rule is new */
import { setMaxListeners } from 'node:events';
import { Registry } from 'prom-client';
import {
  EMPTY,
  NEVER,
  Observable,
  Subject,
  Subscription,
  asyncScheduler,
  distinctUntilChanged,
  filter,
  of,
  map,
  merge,
  pairwise,
  share,
  tap,
} from 'rxjs';
import { AdmissionLedger, PauseGate, PoolResult } from '@rxfleet/operators';
import { BadMessageSource, BadMessages, isUnexpectedReply } from '../../lib/choria/badMessages';
import { ElectionMetrics } from '../../lib/choria/electionMetrics';
import { errorMessage } from '../../lib/choria/errors';
import { lifecycleEventJson, lifecycleSubject, newLifecycleEvent } from '../../lib/choria/lifecycle';
import { ElectionEvent, campaign } from '../../lib/election/campaign';
import { silentLogger } from '../../lib/logger';
import { formatGoDuration } from '../../lib/duration';
import { broadcastDiscovery } from '../../streams/choria/discovery';
import { lifecycleEvents } from '../../streams/choria/lifecycleListener';
import { ChoriaRpcClient } from '../../streams/choria/rpcClient';
import { natsElectionStore } from '../../streams/election/natsElectionStore';
import { MonitorEndpoint, serveMonitorEndpoint } from '../../streams/monitorEndpoint';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { nodeSiteFiles } from '../../streams/siteFiles';
import { ConfigurationError } from '../../lib/provision/config';
import { connectionPlan } from '../../streams/choria/connectionPlan';
import { resolveBrokers } from '../../streams/choria/srvLookup';
import { CredentialWatch } from '../../streams/credentialWatch';
import { registerProcessMetrics } from '../../streams/processMetrics';
import { isValidLifecycleComponent } from '../../lib/choria/lifecycleComponent';
import { MalformedInputSource, ProvisionerMetrics } from '../../lib/provision/metrics';
import { CycleResult, HostTicket, Sighting, provisionPipeline } from '../../lib/provision/pipeline';
import { ProvisionCycle } from '../../lib/provision/provisionCycle';
import { singleReplicaWarning } from '../../lib/bucketLayout';
import { ActiveActive, STARTUP_QUEUE_GROUP, startActiveActive } from './activeActive';
import { startHelper } from './helperSetup';
import { defaultIncusFeed } from '../../lib/provision/incusFeedConfig';
import { incusFeed } from './incusFeed';
import { pipelineHooks } from './pipelineHooks';
import { DaemonStatus, ELECTION_KEY, PROVISIONER_COMPONENT, ProvisionerDaemon, ProvisionerDaemonOptions, StopReport } from './daemonTypes';

export { ELECTION_KEY, PROVISIONER_COMPONENT } from './daemonTypes';
export type { DaemonStatus, DaemonTuning, ProvisionerDaemon, ProvisionerDaemonOptions, StopReport } from './daemonTypes';

const MALFORMED_SOURCE: Record<BadMessageSource, MalformedInputSource | undefined> = {
  reply: 'rpc_reply',
  broadcast_reply: 'discovery_reply',
  lifecycle: 'lifecycle_event',
  request: undefined,
};

/**
 * Starts `rxfleet provision`: the design card's pipeline with its real parts. In order: the metrics
 * (every series at zero), the pause gate (closed first with leader_election, before any source),
 * the monitor endpoint, the NATS connection, the provisioner's own startup event, the RPC client,
 * the helper, the provisioning cycle, the election, and the pipeline (discovery ticks, election-won
 * triggers and startup events through `pauseWhen`, admission, the worker pool, the release).
 *
 * Guarantees:
 * - With leader_election nothing is discovered, admitted or sent until the election is won; `won`
 *   resumes and discovers at once; `lost` pauses (in-flight RPCs stop at the attempt boundary, the
 *   helper is not started) and resets the admission ledger. Election set-up failures are retried,
 *   logged and counted (P8).
 * - Gauges follow the ledger (P4): `waiting_nodes` = identities held, `work_queue_entries` =
 *   admitted and not started; `busy_workers` and `paused` follow the pool and the gate.
 * - A refused sighting is counted on its own, not as discovered (P3); a lock refusal neither as a
 *   provision error nor an RPC error (P10); malformed input by source.
 * - Secrets (token, passwords, keys) are never logged.
 */
export async function startProvisioner(options: ProvisionerDaemonOptions): Promise<ProvisionerDaemon> {
  const { config, choria, tuning = {} } = options;
  const logger = options.logger ?? silentLogger;
  const registry = options.registry ?? new Registry();
  const scheduler = tuning.scheduler ?? asyncScheduler;
  const identity = choria.identity;
  const intervalMs = tuning.intervalMs ?? config.intervalMs;
  const electionOn = config.leaderElection;
  const activeActiveOn = config.rxfleet.mode === 'active-active';

  const metrics = new ProvisionerMetrics({ registry, site: config.site });
  // At zero even without leader_election, as every other series (P2): a dashboard's query finds them.
  const electionMetrics = new ElectionMetrics({ registry, election: ELECTION_KEY, identity });
  if (options.processMetrics !== false) registerProcessMetrics(registry);
  // Closed first with leader_election (until won) and active-active (until the claims bucket is read).
  const gate = new PauseGate(electionOn || activeActiveOn);
  const gateWatch = gate.paused$.subscribe((paused) => metrics.setPaused(paused));

  let state: DaemonStatus['state'] = 'running';
  let busyWorkers = 0;
  let leader = false;
  let electionReady = false;

  const ledger = new AdmissionLedger<Sighting, string>({
    key: (s) => s.identity,
    window: intervalMs,
    capacity: config.rxfleet.queueCapacity,
    scheduler,
  });
  const ledgerWatch = ledger.sizes$.subscribe(({ held, queued }) => {
    metrics.setWaitingNodes(held);
    metrics.setWorkQueueEntries(queued);
  });

  let connection: FleetConnection | undefined = options.connection;
  let credentialWatch: CredentialWatch | undefined;
  let stopCredentialWatch = (): void => undefined;
  let activeActive: ActiveActive | undefined;
  const companion = options.companion;
  const ready = (): boolean =>
    state === 'running' &&
    connection?.state === 'connected' &&
    (!electionOn || electionReady) &&
    (activeActive?.ready() ?? true) &&
    (companion?.ready() ?? true);
  const status = (): DaemonStatus => ({
    state,
    connection: connection?.state ?? 'disconnected',
    paused: gate.paused,
    leader,
    electionReady,
    busyWorkers,
    held: ledger.held,
    queued: ledger.queued,
  });

  const monitorPort = tuning.monitorPort ?? (config.monitorPort > 0 ? config.monitorPort : undefined);
  let monitor: MonitorEndpoint | undefined;
  if (monitorPort !== undefined)
    monitor = await serveMonitorEndpoint({
      port: monitorPort,
      ...(config.rxfleet.monitorHost !== undefined ? { host: config.rxfleet.monitorHost } : {}),
      registry,
      ready,
      describe: () => ({
        ...status(),
        ...(credentialWatch?.problem() !== undefined ? { login: credentialWatch.problem() } : {}),
        ...(companion !== undefined ? { [companion.name]: companion.status() } : {}),
      }),
      logger,
    });

  logger.info(
    {
      config: config.file,
      intervalMs,
      workers: config.workers,
      identity,
      leaderElection: electionOn,
      mode: config.rxfleet.mode,
      helperMode: config.rxfleet.helperMode,
    },
    `Choria Provisioner starting using configuration file ${config.file ?? '(none)'}`,
  );

  const ownConnection = connection === undefined;
  let plan: ReturnType<typeof connectionPlan>;
  try {
    plan = connectionPlan(config, choria);
    if (connection === undefined) {
      const errors = plan.problems.filter((p) => p.severity === 'error');
      if (errors.length > 0) throw new ConfigurationError(plan.problems);
      // What the first hour after a switch needs to see: which provider, name, TLS and protocol.
      const security = plan.security;
      const requests =
        plan.protocol.version === 'v2'
          ? 'v2, signed with the seed'
          : plan.protocol.signer !== undefined
            ? 'v1, signed with the x509 key'
            : 'v1, unsigned';
      const tls =
        security?.tls === undefined
          ? 'off'
          : security.tls.verify
            ? security.tls.cert !== undefined
              ? 'mutual, verified'
              : 'verified'
            : 'encrypted, not verified';
      logger.info(
        { provider: security?.provider, certname: security?.certname, callerId: plan.callerId, tls, requests },
        `security provider ${security?.provider ?? 'unknown'}: caller ${plan.callerId}, TLS ${tls}, requests ${requests}`,
      );
      const lookUp = () =>
        resolveBrokers(plan.brokers, {
          logger,
          ...(config.rxfleet.dnsServers.length > 0 ? { dnsServers: config.rxfleet.dnsServers } : {}),
        });
      const brokers = await lookUp();
      // Every credential is read again at each (re)connection, and SRV records looked up again, as
      // go-choria does for every connection; the watch logs what changed and exports expiries.
      credentialWatch = new CredentialWatch({ credentials: plan.credentials, logger, registry });
      stopCredentialWatch = credentialWatch.every();
      connection = await openNatsConnection(
        {
          ...plan.nats,
          servers: brokers.servers,
          watch: credentialWatch,
          ...(plan.brokers.kind === 'srv' ? { resolveServers: async () => (await lookUp()).servers } : {}),
        },
        logger,
      );
    }
  } catch (error) {
    stopCredentialWatch();
    await monitor?.close();
    gateWatch.unsubscribe();
    ledgerWatch.unsubscribe();
    throw error;
  }
  const nc = connection.nc;
  const protocol = plan.protocol;

  // The instance announces itself, as upstream: legacy format, component `provisioner`.
  try {
    const event = newLifecycleEvent('startup', { identity, component: PROVISIONER_COMPONENT, version: options.version ?? '0.0.0' });
    nc.publish(lifecycleSubject('startup', PROVISIONER_COMPONENT), lifecycleEventJson(event, 'choria'));
  } catch (error) {
    logger.error({ err: error }, 'could not publish the startup event');
  }

  // Every refused message is counted; the log shows the first few of each minute and a summary.
  const badMessages = new BadMessages({
    logger,
    scheduler,
    onReport: (source, refusal) => {
      if (isUnexpectedReply(refusal.reason)) return metrics.unexpectedReply(refusal.reason);
      const label = MALFORMED_SOURCE[source];
      if (label !== undefined) metrics.malformedInput(label);
    },
  });
  const client = new ChoriaRpcClient({
    nc,
    identity,
    callerId: plan.callerId,
    protocol,
    ttl: choria.requestTtlSeconds,
    discoveryTimeoutSeconds: choria.discoveryTimeoutSeconds,
    badMessages,
    // Requests whose replies a broker outage lost are sent again as soon as it is back.
    connection: connection.state$,
    scheduler,
    logger,
  });
  const helpers = startHelper(config, {
    gate,
    metrics,
    registry,
    logger,
    ...(tuning.helperEnv !== undefined ? { env: tuning.helperEnv } : {}),
  });
  const helper = helpers.helper;
  const cycle = new ProvisionCycle({
    files: nodeSiteFiles,
    config,
    client,
    helper,
    gate,
    metrics,
    scheduler,
    logger,
    ...(tuning.rpcTimeoutMs !== undefined ? { rpcTimeoutMs: tuning.rpcTimeoutMs } : {}),
    ...(tuning.retryBackoffMs !== undefined ? { backoffMs: tuning.retryBackoffMs } : {}),
    ...(tuning.random !== undefined ? { random: tuning.random } : {}),
    // Active-active: an RPC attempt waits for its node's claim to be confirmed (P20).
    ...(activeActiveOn ? { beforeAttempt: (id: string) => activeActive?.claims.attemptReady?.(id) ?? of(undefined) } : {}),
  });

  const electionEvents = new Subject<ElectionEvent>();
  const leadershipWatch = new Subscription();
  let won$: Observable<unknown> | undefined;
  let lost$: Observable<unknown> | undefined;
  if (electionOn) {
    let warned = false;
    const store =
      options.electionStore ??
      natsElectionStore({
        nc,
        apiPrefix: config.rxfleet.electionApiPrefix,
        onLayout: (layout) => {
          const warning = warned ? undefined : singleReplicaWarning(layout);
          if (warning !== undefined) logger.warn({ bucket: layout.bucket, replicas: layout.replicas, cluster: layout.cluster }, warning);
          warned ||= warning !== undefined;
        },
      });
    const em = electionMetrics;
    logger.info({ election: ELECTION_KEY }, `Starting leader election against '${ELECTION_KEY}'`);
    const election$ = campaign({
      identity,
      store,
      scheduler,
      logger,
      ...(config.rxfleet.electionCandidateIntervalMs !== undefined
        ? { maxCandidateIntervalMs: config.rxfleet.electionCandidateIntervalMs }
        : {}),
      ...(tuning.electionStartSplayMs !== undefined ? { startSplayMs: tuning.electionStartSplayMs } : {}),
      ...(tuning.electionAnnounceDelayMs !== undefined ? { announceDelayMs: tuning.electionAnnounceDelayMs } : {}),
      ...(tuning.electionSetupRetryMs !== undefined ? { setupRetryMs: tuning.electionSetupRetryMs } : {}),
      ...(tuning.random !== undefined ? { random: tuning.random } : {}),
      hooks: {
        onCampaign: (s) => em.campaign(s),
        onLeader: (l) => em.setLeader(l),
        onInterval: (ms) => em.setIntervalSeconds(ms / 1000),
        onSetupFailure: (error, attempt) => {
          em.setupFailure();
          logger.error({ err: error, attempt }, `leader election set-up failed (attempt ${attempt}): ${errorMessage(error)}; retrying`);
        },
        onSetup: (ttlMs) => {
          electionReady = true;
          logger.info({ ttlMs }, 'leader election set up: campaigning');
        },
      },
    }).pipe(
      tap((event) => electionEvents.next(event)),
      share(),
    );
    // Leadership as a stream, and the gate as its negation. The gate's subscription is made first,
    // so it has resumed before `won` reaches the pipeline's pause gate and paused before `lost`
    // resets admission.
    const leading$ = election$.pipe(
      map((event) => event === 'won'),
      distinctUntilChanged(),
      share(),
    );
    leadershipWatch.add(
      leading$.subscribe((leads) => {
        leader = leads;
        if (leads) gate.resume();
        else gate.pause();
        logger.warn(leads ? 'Became leader after winning election' : 'Lost leadership');
      }),
    );
    won$ = leading$.pipe(filter((leads) => leads));
    lost$ = leading$.pipe(filter((leads) => !leads));
  }

  if (activeActiveOn) {
    activeActive = startActiveActive({
      config,
      identity,
      nc,
      gate,
      registry,
      logger,
      scheduler,
      intervalMs,
      ...(options.claimStore !== undefined ? { store: options.claimStore } : {}),
      ...(tuning.claimsSetupRetryMs !== undefined ? { setupRetryMs: tuning.claimsSetupRetryMs } : {}),
      ...(tuning.random !== undefined ? { random: tuning.random } : {}),
    });
  }

  const hooks = pipelineHooks({
    metrics,
    logger,
    queueCapacity: config.rxfleet.queueCapacity,
    onBusy: (n) => (busyWorkers = n),
  });

  const stop$ = new Subject<void>();
  const hardStop = new AbortController();
  // Every cycle in flight listens to it: as many listeners as workers, by design.
  setMaxListeners(0, hardStop.signal);
  const results = new Subject<PoolResult<HostTicket, CycleResult>>();
  const discoveryOptions = {
    scheduler,
    ...(tuning.discoveryIdleMs !== undefined ? { idleMs: tuning.discoveryIdleMs } : {}),
    ...(tuning.discoveryTimeoutMs !== undefined ? { timeoutMs: tuning.discoveryTimeoutMs } : {}),
  };

  // A component upstream accepts but NATS cannot subscribe to (a space): upstream logs the failed
  // subscription and runs on discovery alone, and so does rxfleet.
  function startupEvents(): Observable<string> {
    if (!isValidLifecycleComponent(config.lifecycleComponent)) {
      logger.error(
        { component: config.lifecycleComponent },
        `Could not listen for lifecycle events: invalid lifecycle component ${JSON.stringify(config.lifecycleComponent)}; nodes are found by discovery only`,
      );
      return NEVER;
    }
    // Active-active: each startup event is handled by one instance of the queue group.
    return lifecycleEvents(nc, {
      component: config.lifecycleComponent,
      badMessages,
      logger,
      ...(activeActive !== undefined ? { queue: STARTUP_QUEUE_GROUP } : {}),
    }).pipe(map((event) => event.identity));
  }

  // The Incus feed: from the file, or every default for events handed over in-process.
  const incus = config.rxfleet.incus ?? (options.incusEvents !== undefined ? defaultIncusFeed() : undefined);

  let resolvePipelineDone!: () => void;
  const pipelineDone = new Promise<void>((resolve) => (resolvePipelineDone = resolve));
  const pipeline = provisionPipeline({
    discover: () =>
      activeActive === undefined
        ? broadcastDiscovery(client, discoveryOptions)
        : broadcastDiscovery(client, discoveryOptions).pipe(map(activeActive.spread)),
    startupEvents: startupEvents(),
    ...(incus !== undefined
      ? {
          incusSightings: incusFeed({
            feed: incus,
            nc,
            metrics,
            logger,
            ...(options.incusEvents !== undefined ? { events$: options.incusEvents } : {}),
          }),
        }
      : {}),
    ...(activeActive !== undefined ? { claims: activeActive.claims } : {}),
    ...(won$ !== undefined ? { won: won$ } : {}),
    // A round at once after a reconnect (startup events sent meanwhile were lost: core NATS is at
    // most once) and once active-active is set up (the round at start ran while the gate was closed).
    discoverNow: merge(
      connection.state$.pipe(
        pairwise(),
        filter(([before, now]) => before === 'disconnected' && now === 'connected'),
      ),
      activeActive?.setUp$ ?? EMPTY,
    ),
    ...(lost$ !== undefined ? { lost: lost$ } : {}),
    gate,
    provision: (ticket) => cycle.outcome(ticket, hardStop.signal),
    interval: intervalMs,
    workers: config.workers,
    queueCapacity: config.rxfleet.queueCapacity,
    ...(tuning.settleMs !== undefined ? { settleMs: tuning.settleMs } : {}),
    ...(tuning.lockHoldMs !== undefined ? { lockHoldMs: tuning.lockHoldMs } : {}),
    hooks,
    scheduler,
    ledger,
    stop: stop$,
  });
  let failure: string | undefined;
  const running = pipeline.subscribe({
    next: (result) => results.next(result),
    error: (error: unknown) => {
      // The pipeline turns every cycle and discovery failure into a value; reaching here is a bug.
      // A daemon that no longer provisions must not stay ready: it stops, and its process exits 1
      // so a supervisor restarts it.
      failure = errorMessage(error);
      logger.fatal({ err: error }, `the provisioning pipeline failed: ${failure}`);
      resolvePipelineDone();
      // Later, not here: the pipeline may fail while it is being subscribed, before `stop` exists.
      queueMicrotask(() => void stop({ graceMs: 0 }));
    },
    complete: () => resolvePipelineDone(),
  });

  let stopping: Promise<StopReport> | undefined;
  let resolveStopped!: (report: StopReport) => void;
  const stopped = new Promise<StopReport>((resolve) => (resolveStopped = resolve));

  const stop = (stopOptions: { graceMs?: number } = {}): Promise<StopReport> => {
    if (stopping !== undefined) return stopping;
    stopping = (async () => {
      const graceMs = stopOptions.graceMs ?? config.rxfleet.shutdownGraceMs;
      state = 'stopping';
      const inFlight = busyWorkers;
      logger.info(
        { inFlight, graceMs },
        `stopping: no more discovery or admission; ${inFlight} node${inFlight === 1 ? '' : 's'} in flight may finish within ${formatGoDuration(graceMs)}`,
      );
      stop$.next();
      stop$.complete();
      // Queued nodes are dropped (a worker skips them); the next instance or run rediscovers them.
      ledger.reset();
      let abandoned = 0;
      const timer = setTimeout(() => {
        abandoned = busyWorkers;
        logger.warn({ abandoned }, `shutdown grace period over: aborting ${abandoned} node${abandoned === 1 ? '' : 's'} still in flight`);
        hardStop.abort(new Error('the shutdown grace period is over'));
      }, graceMs);
      await pipelineDone;
      clearTimeout(timer);
      running.unsubscribe();
      activeActive?.stop();
      await helpers.close();
      results.complete();
      electionEvents.complete();
      client.close();
      badMessages.close();
      leadershipWatch.unsubscribe();
      gateWatch.unsubscribe();
      ledgerWatch.unsubscribe();
      stopCredentialWatch();
      await monitor?.close();
      if (ownConnection) await connection?.drain();
      state = 'stopped';
      logger.info({ abandoned }, 'stopped');
      const report: StopReport = failure === undefined ? { abandoned } : { abandoned, failed: failure };
      resolveStopped(report);
      return report;
    })();
    return stopping;
  };

  return {
    identity,
    registry,
    metrics,
    gate,
    ledger,
    monitorPort: monitor?.port,
    results$: results.asObservable(),
    election$: electionEvents.asObservable(),
    status,
    ready,
    stop,
    abort: (reason = 'aborted') => {
      if (!hardStop.signal.aborted) hardStop.abort(new Error(reason));
      helpers.kill();
    },
    stopped,
  };
}
