import { Observable, SchedulerLike, asyncScheduler } from 'rxjs';
import { Logger, silentLogger } from '../logger';
import { ElectionStore } from './ElectionStore';
import { PendingWork, pendingWork } from './pendingWork';
import { TWENTY_SEC_BACKOFF_MS, backoffDelay } from '../choria/backoff';

/** What the election tells its owner. */
export type ElectionEvent = 'won' | 'lost';

/** Where a campaigner stands. */
export type CampaignState = 'candidate' | 'leader';

/** Hooks for the election metrics and the set-up failures DECISIONS P8 wants visible. */
export interface CampaignHooks {
  /** Every tick, in the state it ran in (`choria_election_campaigns{state}`). */
  onCampaign?(state: CampaignState): void;
  /** Became leader, or stopped being one (`choria_election_leader`). */
  onLeader?(leader: boolean): void;
  /** The wait until the next tick, in milliseconds (`choria_election_interval_seconds`). */
  onInterval?(ms: number): void;
  /** Reading the bucket failed; it will be tried again (P8). */
  onSetupFailure?(error: unknown, attempt: number): void;
  /** Set-up succeeded: the bucket's TTL was read and campaigning starts (a daemon is ready then). */
  onSetup?(ttlMs: number): void;
}

/** Options for {@link campaign}. */
export interface CampaignConfig {
  /** The value written to the key: who leads. */
  identity: string;
  store: ElectionStore;
  /**
   * Longest wait between a candidate's attempts (DECISIONS P14). Default a quarter of the bucket
   * TTL: upstream's 20 s ceiling would make failover take up to TTL + 30 s.
   */
  maxCandidateIntervalMs?: number;
  /** Random wait before the first attempt, so instances started together do not collide. Default 5 s. */
  startSplayMs?: number;
  /** Wait between the refresh that confirms leadership and the `won` announcement. Default 200 ms. */
  announceDelayMs?: number;
  /** Wait before set-up attempt `n + 1` after `n` failures. Default 1 s doubling to 30 s. */
  setupRetryMs?: (failures: number) => number;
  scheduler?: SchedulerLike;
  random?: () => number;
  logger?: Logger;
  hooks?: CampaignHooks;
}

const defaultSetupRetry = (failures: number): number => Math.min(1000 * 2 ** (failures - 1), 30_000);

/**
 * Campaigns for a key the way Choria Streams elections do (go-choria
 * `providers/election/streams`), so rxfleet and Go provisioners can stand in one election:
 *
 * - set-up reads the bucket's TTL; failures are logged, reported and retried for ever (P8);
 * - after a random start splay, a candidate tries to `create` the key with its identity; on
 *   success it is leader and refreshes with `update` from the last sequence it wrote;
 * - `won` is announced one successful refresh after the create, plus `announceDelayMs`, to give a
 *   previous leader a chance to stand down; a failed refresh makes it a candidate and emits `lost`;
 * - the wait between ticks is the TwentySec backoff (jittered, from 0.5 s for the leader), capped
 *   for candidates at `maxCandidateIntervalMs` (P14).
 *
 * ```
 * ttl read ─ splay ─ create ✓ ─ ~0.5 s ─ update ✓ ─ 200 ms ─ won ─ ~0.5 s ─ update ✓ ... update ✗ ─ lost
 * ```
 *
 * Never errors and never completes on its own. Unsubscribing stops campaigning without emitting
 * `lost` and without deleting the key, as upstream: the key expires after the bucket TTL.
 */
export function campaign(config: CampaignConfig): Observable<ElectionEvent> {
  const {
    identity,
    store,
    startSplayMs = 5000,
    announceDelayMs = 200,
    setupRetryMs = defaultSetupRetry,
    scheduler = asyncScheduler,
    random = Math.random,
    logger = silentLogger,
    hooks = {},
  } = config;

  return new Observable<ElectionEvent>((subscriber) => {
    let state: CampaignState = 'candidate';
    let lastSequence = 0;
    let tries = 0;
    let announce = false;
    let candidateCap = Infinity;
    // Every timer and store call in flight; at most one of each at a time, all torn down together.
    const work = pendingWork(scheduler);
    subscriber.add(work.subscription);
    const { later, call } = work;

    const scheduleTick = (): void => {
      const jittered = backoffDelay(TWENTY_SEC_BACKOFF_MS, tries, random);
      const delay = state === 'candidate' ? Math.min(jittered, candidateCap) : jittered;
      hooks.onInterval?.(delay);
      later(delay, tick);
    };

    const tick = (): void => {
      hooks.onCampaign?.(state);
      if (state === 'candidate') {
        call(
          () => store.create(identity),
          (sequence) => {
            lastSequence = sequence;
            state = 'leader';
            tries = 0;
            announce = true;
            hooks.onLeader?.(true);
            logger.debug({ identity, sequence }, 'election key created; confirming leadership');
            scheduleTick();
          },
          (error) => {
            tries++;
            logger.debug({ err: error, tries }, 'election key is held by another candidate');
            scheduleTick();
          },
        );
        return;
      }
      call(
        () => store.update(identity, lastSequence),
        (sequence) => {
          lastSequence = sequence;
          if (!announce) {
            scheduleTick();
            return;
          }
          announce = false;
          later(announceDelayMs, () => {
            logger.info({ identity }, 'won the election');
            subscriber.next('won');
            scheduleTick();
          });
        },
        (error) => {
          state = 'candidate';
          lastSequence = 0;
          announce = false;
          hooks.onLeader?.(false);
          logger.warn({ err: error, identity }, 'lost the election: the key refresh failed');
          subscriber.next('lost');
          scheduleTick();
        },
      );
    };

    setUp(store, work, { hooks, logger, setupRetryMs }, (ttl) => {
      candidateCap = config.maxCandidateIntervalMs ?? ttl / 4;
      hooks.onSetup?.(ttl);
      logger.info({ identity, ttlMs: ttl, maxCandidateIntervalMs: candidateCap }, 'campaigning for leadership');
      later(random() * startSplayMs, tick);
    });
  });
}

/**
 * Set-up (DECISIONS P8): reads the bucket's TTL until it is one an election can run on (1 s to
 * 1 h), reporting, logging and retrying every failure after `setupRetryMs`; then hands the TTL to
 * `ready`, once.
 */
function setUp(
  store: ElectionStore,
  work: PendingWork,
  report: { hooks: CampaignHooks; logger: Logger; setupRetryMs: (failures: number) => number },
  ready: (ttlMs: number) => void,
): void {
  const { hooks, logger, setupRetryMs } = report;
  const attempt = (failures: number): void => {
    work.call(
      () => store.ttl(),
      (ttl) => {
        if (!(ttl >= 1000 && ttl <= 3_600_000)) {
          const error = new Error(`election bucket TTL must be between 1 s and 1 h, it is ${ttl} ms`);
          hooks.onSetupFailure?.(error, failures + 1);
          logger.error({ err: error }, 'election set-up failed; retrying');
          work.later(setupRetryMs(failures + 1), () => attempt(failures + 1));
          return;
        }
        ready(ttl);
      },
      (error) => {
        hooks.onSetupFailure?.(error, failures + 1);
        logger.error({ err: error, attempt: failures + 1 }, 'election set-up failed: cannot read the bucket; retrying');
        work.later(setupRetryMs(failures + 1), () => attempt(failures + 1));
      },
    );
  };
  attempt(0);
}
