import { NatsConnection } from '@nats-io/transport-node';
import { Registry } from 'prom-client';
import { Observable, ReplaySubject, SchedulerLike, Subscription, of } from 'rxjs';
import { PauseGate, workFailed } from '@rxfleet/operators';
import { formatGoDuration } from '../../lib/choria/duration';
import { errorMessage } from '../../lib/choria/errors';
import { Logger } from '../../lib/logger';
import { ClaimMetrics } from '../../lib/provision/claims/claimMetrics';
import { singleReplicaWarning } from '../../lib/bucketLayout';
import { ClaimHooks, ClaimStore, NodeClaims, readClaimsTtl, rotateRound } from '../../lib/provision/claims/claims';
import { ProvisionerConfig } from '../../lib/provision/config/config';
import { ClaimStage } from '../../lib/provision/pipeline';
import { CycleError } from '../../lib/provision/cycle/provisionCycle';
import { natsClaimStore } from '../../streams/claims/natsClaimStore';
import { CycleOutcome } from '../../lib/provision/cycle/cycleResult';
import { HostTicket } from '../../lib/provision/sightings/sighting';

/** The queue group active-active instances hear startup events in: each event reaches one of them. */
export const STARTUP_QUEUE_GROUP = 'rxfleet-provisioners';

/** Options for {@link startActiveActive}. */
export interface ActiveActiveOptions {
  config: ProvisionerConfig;
  /** This instance: the claims' value. */
  identity: string;
  nc: NatsConnection;
  /** The claims bucket; default the NATS one the configuration names. */
  store?: ClaimStore;
  /** Closed until the bucket's TTL is read, then opened: the daemon creates it closed. */
  gate: PauseGate;
  registry: Registry;
  logger: Logger;
  scheduler: SchedulerLike;
  /** The discovery interval in use (the admission window), to warn about a TTL shorter than two. */
  intervalMs: number;
  setupRetryMs?: (attempt: number) => number;
  random?: () => number;
}

/** Active-active, running: what the daemon's pipeline takes from it. */
export interface ActiveActive {
  /** The claim stage of the pipeline. */
  readonly claims: ClaimStage;
  /** Spreads a discovery round: each instance starts at a random node, so few claims collide. */
  spread(identities: string[]): string[];
  /** Whether the claims bucket is set up (its TTL read). */
  ready(): boolean;
  /** The revision this instance's claim on the node was written at, for its cycle's record; forgotten once read. */
  claimRevision(node: string): number | undefined;
  /** Emits once the bucket is set up and the gate open: the first discovery round may run (the one at start was skipped while closed). */
  readonly setUp$: Observable<void>;
  stop(): void;
}

/**
 * Active-active provisioning (DECISIONS P16), wired: the claims bucket's TTL is read first (with
 * retries, each failure logged and counted, P8's rule) while the gate stays closed; once read, the
 * claim stage runs every cycle under a claim, the gate opens, and discovery rounds (run by every
 * instance: claims make that safe) start at a random node of the round.
 */
export function startActiveActive(options: ActiveActiveOptions): ActiveActive {
  const { config, identity, gate, logger, scheduler, intervalMs } = options;
  const metrics = new ClaimMetrics({ registry: options.registry, site: config.site, identity });
  let warned = false;
  const store =
    options.store ??
    natsClaimStore({
      nc: options.nc,
      bucket: config.rxfleet.claimsBucket,
      apiPrefix: config.rxfleet.claimsApiPrefix,
      onLayout: (layout) => {
        const warning = singleReplicaWarning(layout);
        if (warning === undefined || warned) return;
        warned = true;
        logger.warn({ bucket: layout.bucket, replicas: layout.replicas, cluster: layout.cluster }, warning);
      },
    });
  const random = options.random ?? Math.random;
  let claims: NodeClaims | undefined;
  // Set when a claim is won, read (and forgotten) when the node's cycle is recorded: one entry per cycle in flight.
  const revisions = new Map<string, number>();
  const setUpDone = new ReplaySubject<void>(1);

  const setUp: Subscription = readClaimsTtl(store, {
    scheduler,
    retryMs: options.setupRetryMs,
    onFailure: (error, attempt) => {
      metrics.error('setup');
      logger.error(
        { err: error, attempt, bucket: config.rxfleet.claimsBucket },
        `the claims bucket ${config.rxfleet.claimsBucket} cannot be read (attempt ${attempt}): ${errorMessage(error)}; retrying`,
      );
    },
  }).subscribe((ttlMs) => {
    claims = new NodeClaims({
      store,
      owner: identity,
      ttlMs,
      scheduler,
      hooks: claimHooks(metrics, logger, revisions),
    });
    logger.info(
      { ttlMs, bucket: config.rxfleet.claimsBucket },
      `claims bucket ${config.rxfleet.claimsBucket} set up: a claim lives ${formatGoDuration(ttlMs)}; provisioning active-active`,
    );
    if (ttlMs < 2 * intervalMs) {
      logger.warn(
        { ttlMs, intervalMs },
        `claims live ${formatGoDuration(ttlMs)}, less than twice the interval: sightings older than that are skipped rather than risk a node another instance has finished`,
      );
    }
    gate.resume();
    setUpDone.next();
    setUpDone.complete();
  });

  return {
    claims: {
      around: (ticket: HostTicket, cycle: () => Observable<CycleOutcome>): Observable<CycleOutcome> =>
        claims === undefined
          ? of(workFailed(new CycleError(ticket.key, 'claim', 'the claims bucket is not set up yet')))
          : claims.around(ticket, cycle),
      attemptReady: (identity: string): Observable<void> => claims?.attemptReady(identity) ?? of(undefined),
    },
    spread: (identities) => rotateRound(identities, random() * identities.length),
    ready: () => claims !== undefined,
    claimRevision: (node) => {
      const revision = revisions.get(node);
      revisions.delete(node);
      return revision;
    },
    setUp$: setUpDone.asObservable(),
    stop: () => setUp.unsubscribe(),
  };
}

/**
 * What a claim's life is counted and logged as: won (its revision kept for the cycle's record),
 * lost to another instance, kept for a node that may hold this instance's configuration, lapsed,
 * and a bucket operation that failed (the first of a cycle at error, the rest at debug).
 */
function claimHooks(metrics: ClaimMetrics, logger: Logger, revisions: Map<string, number>): ClaimHooks {
  return {
    ...metrics.hooks(),
    won: (node, revision) => {
      metrics.claim('won');
      revisions.set(node, revision);
    },
    lost: (node) => {
      metrics.claim('lost');
      logger.debug({ identity: node }, `${node} is claimed by another provisioner: leaving it`);
    },
    kept: (node, error) => {
      metrics.claim('kept');
      logger.warn(
        { identity: node },
        `${node} may hold this instance's configuration and did not answer (${errorMessage(error)}): its claim is kept and its cycle run again`,
      );
    },
    lapsed: (node, why) => {
      metrics.claim('lapsed');
      logger.warn({ identity: node }, `the claim on ${node} lapsed (${why}): its cycle was stopped`);
    },
    failed: (operation, node, error, first = true) => {
      metrics.error(operation);
      // A bucket without a leader fails every claim's write each second until it has one: the first per cycle is enough.
      const line = `claims bucket ${operation} for ${node} failed: ${errorMessage(error)}${operation === 'release' ? '' : '; waiting for the bucket'}`;
      if (first) logger.error({ identity: node, operation }, line);
      else logger.debug({ identity: node, operation }, line);
    },
  };
}
