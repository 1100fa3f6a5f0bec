import { setMaxListeners } from 'node:events';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { EMPTY, NEVER, Observable, SchedulerLike, Subject, Subscription, asyncScheduler, distinctUntilChanged, filter, map, merge, pairwise, share, tap } from 'rxjs';
import { AdmissionLedger, PauseGate, PoolResult } from '@rxfleet/operators';
import { BadMessageSource, BadMessages, isUnexpectedReply } from '../../lib/choria/badMessages';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ElectionMetrics } from '../../lib/choria/electionMetrics';
import { errorMessage } from '../../lib/choria/errors';
import { lifecycleEventJson, lifecycleSubject, newLifecycleEvent } from '../../lib/choria/lifecycle';
import { ElectionStore } from '../../lib/election/ElectionStore';
import { ElectionEvent, campaign } from '../../lib/election/campaign';
import { Logger, silentLogger } from '../../lib/logger';
import { broadcastDiscovery } from '../../streams/choria/discovery';
import { lifecycleEvents } from '../../streams/choria/lifecycleListener';
import { ChoriaRpcClient } from '../../streams/choria/rpcClient';
import { natsElectionStore } from '../../streams/election/natsElectionStore';
import { MonitorEndpoint, serveMonitorEndpoint } from '../../streams/monitorEndpoint';
import { ConnectionState, FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { nodeSiteFiles } from '../../streams/siteFiles';
import { ConfigurationError, ProvisionerConfig } from '../../lib/provision/config';
import { connectionPlan } from '../../streams/choria/connectionPlan';
import { resolveBrokers } from '../../streams/choria/srvLookup';
import { isValidLifecycleComponent } from '../../lib/choria/lifecycleComponent';
import { MalformedInputSource, ProvisionerMetrics } from '../../lib/provision/metrics';
import { CycleResult, HostTicket, PipelineHooks, Sighting, provisionPipeline } from '../../lib/provision/pipeline';
import { CycleError, ProvisionCycle } from '../../lib/provision/provisionCycle';
import { ClaimStore } from '../../lib/provision/claims';
import { ActiveActive, STARTUP_QUEUE_GROUP, startActiveActive } from './activeActive';
import { startHelper } from './helperSetup';
import { EventPayload } from '../../lib/enricher/payload';
import { defaultIncusFeed } from '../../lib/provision/incusFeedConfig';
import { incusFeed } from './incusFeed';

/** The KV key (and election name) provisioners campaign for, as upstream. */
export const ELECTION_KEY = 'provisioner';
/** The component of the provisioner's own startup event. */
export const PROVISIONER_COMPONENT = 'provisioner';

/**
 * Settings below the configuration file's rules, for tests, the demo and benchmarks: the file
 * insists on an interval of at least a minute, an in-process daemon may run one every 200 ms.
 */
export interface DaemonTuning {
  /** Discovery interval, admission window and stale cut-off base, ms. Default the config's `interval`. */
  intervalMs?: number;
  /** How long a provisioned or shut-down node keeps its key. Default 60 s. */
  settleMs?: number;
  /** How long a node locked by another provisioner keeps its key (P10). Default 2 minutes. */
  lockHoldMs?: number;
  /** Per RPC attempt. Default the Choria config's `discovery_timeout` + the agent's DDL timeout. */
  rpcTimeoutMs?: number;
  /** The retry pauses. Default go-choria's FiveSec table. */
  retryBackoffMs?: readonly number[];
  /** The jitter's randomness. Default `Math.random`. */
  random?: () => number;
  /** Discovery's sliding window and limit, ms. Default 300 and 2000. */
  discoveryIdleMs?: number;
  discoveryTimeoutMs?: number;
  /** The campaign's start splay, announcement delay and set-up retry. Defaults as upstream (5 s, 200 ms). */
  electionStartSplayMs?: number;
  electionAnnounceDelayMs?: number;
  electionSetupRetryMs?: (failures: number) => number;
  /** Active-active: the pause before the `attempt`-th retry of reading the claims bucket. Default 1 s doubling to 30 s. */
  claimsSetupRetryMs?: (attempt: number) => number;
  /** Serve /metrics here instead of `monitor_port` (0: a free port). */
  monitorPort?: number;
  /** The helper's environment. Default this process's. */
  helperEnv?: NodeJS.ProcessEnv;
  /** Ticks, admission windows, settle delays and retry pauses. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/** Options for {@link startProvisioner}. */
export interface ProvisionerDaemonOptions {
  config: ProvisionerConfig;
  choria: ChoriaClientConfig;
  logger?: Logger;
  /** The daemon's registry; default a new one. Never prom-client's global registry. */
  registry?: Registry;
  /**
   * A connection to use instead of opening one from the configuration (the demo's in-memory
   * transport, tests sharing a server). The daemon does not drain a connection it was given.
   */
  connection?: FleetConnection;
  /** The election's bucket; default the Choria Streams bucket over the connection. */
  electionStore?: ElectionStore;
  /** Active-active's claims bucket; default the KV bucket `rxfleet.claims_bucket` over the connection. */
  claimStore?: ClaimStore;
  /** Reported in the startup event. Default `0.0.0`. */
  version?: string;
  /**
   * prom-client's process and Node.js series (`process_*`, `nodejs_*`) on the daemon's registry, as
   * upstream's endpoint carries Go's process collector. Default true; off for several daemons
   * sharing one process (the demo), where the figures would be the same process's twice.
   */
  processMetrics?: boolean;
  /**
   * Enriched Incus events handed over in-process (`rxfleet provision-incus` runs the enricher in
   * the same process): the Incus feed reads these instead of the enricher's NATS subjects, with
   * `rxfleet.incus` or, when the file has no such section, every default.
   */
  incusEvents?: Observable<EventPayload>;
  /**
   * Another part of the same process that /ready waits for and /health describes under `name`
   * (the enricher, in `rxfleet provision-incus`).
   */
  companion?: { name: string; ready(): boolean; status(): object };
  tuning?: DaemonTuning;
}

/** What a running daemon is doing, for /health, /ready, the demo and tests. */
export interface DaemonStatus {
  state: 'running' | 'stopping' | 'stopped';
  connection: ConnectionState;
  paused: boolean;
  /** With leader_election: whether this instance leads. Without: always false. */
  leader: boolean;
  /** With leader_election: whether the election is set up (its bucket's TTL read). */
  electionReady: boolean;
  busyWorkers: number;
  /** Identities held by admission (queued, running or settling). */
  held: number;
  /** Admitted, not yet started. */
  queued: number;
}

/** How a stop went. */
export interface StopReport {
  /** Cycles still running when the grace period ended, aborted. */
  abandoned: number;
  /** Set when the daemon stopped itself because its pipeline failed (a bug): the reason. */
  failed?: string;
}

/** A running provisioner. */
export interface ProvisionerDaemon {
  readonly identity: string;
  readonly registry: Registry;
  readonly metrics: ProvisionerMetrics;
  /** The pause state every reader shares (the election drives it; tests may too). */
  readonly gate: PauseGate;
  readonly ledger: AdmissionLedger<Sighting, string>;
  /** The port /metrics is served on, when it is. */
  readonly monitorPort: number | undefined;
  /** Every finished cycle (and every skipped stale ticket). Completes when the daemon stops. */
  readonly results$: Observable<PoolResult<HostTicket, CycleResult>>;
  /** Election events as they happen (never emits without leader_election). Completes on stop. */
  readonly election$: Observable<ElectionEvent>;
  status(): DaemonStatus;
  /** Ready: connected and, with leader_election, campaigning (standing by counts as ready). */
  ready(): boolean;
  /**
   * DECISIONS P9: stops discovery, events and admission at once (queued nodes are dropped), lets
   * the cycles in flight finish within `graceMs` (default `rxfleet.shutdown_grace`), then aborts
   * what is left, closes the endpoint and drains its own connection. Idempotent.
   */
  stop(options?: { graceMs?: number }): Promise<StopReport>;
  /**
   * Aborts every cycle in flight at once, synchronously: RPC waits end and helpers' process groups
   * are killed. For a process about to exit on a second signal, so no helper outlives it.
   */
  abort(reason?: string): void;
  /** Resolves once stopped. */
  readonly stopped: Promise<StopReport>;
}

/** How the admission line says where a sighting came from (upstream's words for its two). */
const ADMITTED_AFTER: Record<Sighting['via'], string> = { discovery: 'discovering it', event: 'receiving an event', incus: 'its Incus instance came up' };

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
  if (options.processMetrics !== false) collectDefaultMetrics({ register: registry });
  // Closed first with leader_election (until won) and active-active (until the claims bucket is read).
  const gate = new PauseGate(electionOn || activeActiveOn);
  const gateWatch = gate.paused$.subscribe((paused) => metrics.setPaused(paused));

  let state: DaemonStatus['state'] = 'running';
  let busyWorkers = 0;
  let leader = false;
  let electionReady = false;

  const ledger = new AdmissionLedger<Sighting, string>({ key: (s) => s.identity, window: intervalMs, capacity: config.rxfleet.queueCapacity, scheduler });
  const ledgerWatch = ledger.sizes$.subscribe(({ held, queued }) => {
    metrics.setWaitingNodes(held);
    metrics.setWorkQueueEntries(queued);
  });

  let connection: FleetConnection | undefined = options.connection;
  let activeActive: ActiveActive | undefined;
  const companion = options.companion;
  const ready = (): boolean => state === 'running' && connection?.state === 'connected' && (!electionOn || electionReady) && (activeActive?.ready() ?? true) && (companion?.ready() ?? true);
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
  if (monitorPort !== undefined) monitor = await serveMonitorEndpoint({ port: monitorPort, ...(config.rxfleet.monitorHost !== undefined ? { host: config.rxfleet.monitorHost } : {}), registry, ready, describe: () => ({ ...status(), ...(companion !== undefined ? { [companion.name]: companion.status() } : {}) }), logger });

  logger.info({ config: config.file, intervalMs, workers: config.workers, identity, leaderElection: electionOn, mode: config.rxfleet.mode, helperMode: config.rxfleet.helperMode }, `Choria Provisioner starting using configuration file ${config.file ?? '(none)'}`);

  const ownConnection = connection === undefined;
  let plan: ReturnType<typeof connectionPlan>;
  try {
    plan = connectionPlan(config, choria);
    if (connection === undefined) {
      const errors = plan.problems.filter((p) => p.severity === 'error');
      if (errors.length > 0) throw new ConfigurationError(plan.problems);
      // What the first hour after a switch needs to see: which provider, name, TLS and protocol.
      const security = plan.security;
      const requests = plan.protocol.version === 'v2' ? 'v2, signed with the seed' : plan.protocol.signer !== undefined ? 'v1, signed with the x509 key' : 'v1, unsigned';
      const tls = security?.tls === undefined ? 'off' : security.tls.verify ? (security.tls.cert !== undefined ? 'mutual, verified' : 'verified') : 'encrypted, not verified';
      logger.info({ provider: security?.provider, certname: security?.certname, callerId: plan.callerId, tls, requests }, `security provider ${security?.provider ?? 'unknown'}: caller ${plan.callerId}, TLS ${tls}, requests ${requests}`);
      const brokers = await resolveBrokers(plan.brokers, { logger, ...(config.rxfleet.dnsServers.length > 0 ? { dnsServers: config.rxfleet.dnsServers } : {}) });
      connection = await openNatsConnection({ ...plan.nats, servers: brokers.servers }, logger);
    }
  } catch (error) {
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
  const helpers = startHelper(config, { gate, metrics, registry, logger, ...(tuning.helperEnv !== undefined ? { env: tuning.helperEnv } : {}) });
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
  });

  const electionEvents = new Subject<ElectionEvent>();
  const leadershipWatch = new Subscription();
  let won$: Observable<unknown> | undefined;
  let lost$: Observable<unknown> | undefined;
  if (electionOn) {
    const store = options.electionStore ?? natsElectionStore({ nc, apiPrefix: config.rxfleet.electionApiPrefix });
    const em = electionMetrics;
    logger.info({ election: ELECTION_KEY }, `Starting leader election against '${ELECTION_KEY}'`);
    const election$ = campaign({
      identity,
      store,
      scheduler,
      logger,
      ...(config.rxfleet.electionCandidateIntervalMs !== undefined ? { maxCandidateIntervalMs: config.rxfleet.electionCandidateIntervalMs } : {}),
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

  const hooks: PipelineHooks = {
    discoveryStarted: () => {
      metrics.discoverCycle();
      logger.debug('discovering nodes in provisioning mode');
    },
    discoveryFailed: (error) => {
      metrics.discoveryError();
      logger.error({ err: error }, `discovery failed: ${errorMessage(error)}`);
    },
    discoverySkipped: () => logger.warn('Skipping discovery while paused'),
    droppedWhilePaused: (s) => logger.debug({ identity: s.identity, via: s.via }, s.via === 'event' ? 'Skipping event processing while paused' : 'dropping a discovered node while paused'),
    admitted: (ticket) => {
      // Upstream counts a node once while it is held; a re-admission (P1) has a series of its own.
      if (ticket.value.readmission === true) metrics.readmitted(ticket.value.via);
      else if (ticket.value.via === 'event') metrics.eventDiscovered();
      else if (ticket.value.via === 'incus') metrics.incusDiscovered();
      else metrics.discovered();
      logger.info({ identity: ticket.key, via: ticket.value.via }, `Adding ${ticket.key} to the provision list after ${ADMITTED_AFTER[ticket.value.via]}`);
    },
    refused: (refusal) => {
      metrics.admissionRefused(refusal.reason);
      if (refusal.reason === 'full') logger.warn({ identity: refusal.key, capacity: config.rxfleet.queueCapacity }, `Adding ${refusal.key} to the work queue failed: it is full`);
      else logger.debug({ identity: refusal.key }, `${refusal.key} is already on the provision list`);
    },
    busy: (n) => {
      busyWorkers = n;
      metrics.setBusyWorkers(n);
    },
    finished: ({ ticket, outcome }) => {
      if (outcome.status === 'skipped') {
        logger.debug({ identity: ticket.key }, `skipping ${ticket.key}: its admission was superseded or reset`);
      } else if (outcome.status === 'failed') {
        metrics.provisionError();
        const step = outcome.error instanceof CycleError ? outcome.error.step : undefined;
        logger.error({ identity: ticket.key, step }, `Could not provision ${ticket.key}: ${errorMessage(outcome.error)}`);
      } else if (outcome.value === 'locked' || outcome.value === 'claimed') {
        // Counted by the cycle (P10) or the claim stage (P16): neither provisioned nor an error.
      } else {
        // P7: helper shutdowns and upgrades count as provisioned, as upstream.
        metrics.provisioned();
        logger.info({ identity: ticket.key, result: outcome.value }, outcome.value === 'provisioned' ? `Provisioned ${ticket.key}` : `Finished ${ticket.key}: ${outcome.value}`);
      }
    },
  };

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
      logger.error({ component: config.lifecycleComponent }, `Could not listen for lifecycle events: invalid lifecycle component ${JSON.stringify(config.lifecycleComponent)}; nodes are found by discovery only`);
      return NEVER;
    }
    // Active-active: each startup event is handled by one instance of the queue group.
    return lifecycleEvents(nc, { component: config.lifecycleComponent, badMessages, logger, ...(activeActive !== undefined ? { queue: STARTUP_QUEUE_GROUP } : {}) }).pipe(map((event) => event.identity));
  }

  // The Incus feed: from the file, or every default for events handed over in-process.
  const incus = config.rxfleet.incus ?? (options.incusEvents !== undefined ? defaultIncusFeed() : undefined);

  let resolvePipelineDone!: () => void;
  const pipelineDone = new Promise<void>((resolve) => (resolvePipelineDone = resolve));
  const pipeline = provisionPipeline({
    discover: () => (activeActive === undefined ? broadcastDiscovery(client, discoveryOptions) : broadcastDiscovery(client, discoveryOptions).pipe(map(activeActive.spread))),
    startupEvents: startupEvents(),
    ...(incus !== undefined ? { incusSightings: incusFeed({ feed: incus, nc, metrics, logger, ...(options.incusEvents !== undefined ? { events$: options.incusEvents } : {}) }) } : {}),
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
      logger.info({ inFlight, graceMs }, `stopping: no more discovery or admission; ${inFlight} node${inFlight === 1 ? '' : 's'} in flight may finish within ${graceMs} ms`);
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
