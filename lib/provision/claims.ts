import { Observable, ObservableInput, SchedulerLike, Subscription, asyncScheduler, catchError, from, throwError, timer } from 'rxjs';
import { workFailed } from '@rxfleet/operators';
import { formatGoDuration } from '../choria/duration';
import type { ClaimStage, CycleOutcome, CycleResult, HostTicket } from './pipeline';
import { CycleError, nodeDidNotAnswer } from './provisionCycle';
import { ClaimHeldError, ClaimStoreClosedError, claimKey, once } from './claimStore';
import { ClaimHooks, NodeClaimsOptions } from './claimOptions';

export { ClaimHeldError, ClaimStoreClosedError, claimKey, readClaimsTtl, rotateRound } from './claimStore';
export type { ClaimStore, ReadClaimsTtlOptions } from './claimStore';
export type { ClaimHooks, NodeClaimsOptions } from './claimOptions';

/** Outcomes after which the node leaves provisioning mode: its claim is kept until it ages out. */
const LEAVING: ReadonlySet<CycleResult> = new Set<CycleResult>(['provisioned', 'shutdown']);

/** A held claim, as the attempt guard sees it. */
interface Lease {
  /** When the last write a quorum acknowledged was sent (the claim lives a TTL from then, at least). */
  lastSentAt: number;
  /** False from a failed write until a later one is acknowledged. */
  confirmed: boolean;
  /** Attempts waiting for the claim to be confirmed. */
  waiting: Array<() => void>;
}

/**
 * The claim stage of active-active provisioning (DECISIONS P16, P20): each node's cycle runs only
 * under a claim, a create-only write of the node's key in a KV bucket whose max age bounds the
 * claim's life, so exactly one instance provisions a node at a time.
 *
 * A claim is won only when the write is acknowledged: JetStream acknowledges a KV create or update
 * on a replicated bucket only once a quorum of its servers has it, and compares the key's last
 * revision on the stream leader, so a server cut off from the others (the minority side of a
 * partition) can never hand out a claim. Nothing is ever read to decide a claim.
 *
 * Guarantees, for {@link around}:
 * - A sighting older than the claims' lifetime is refused before claiming (as a stale sighting,
 *   step `stale`): a node another instance finished since then may already have lost its claim.
 * - A node held by another instance is not worked on: the outcome is `claimed`, nothing else runs.
 * - A claim that cannot be written for any other reason (no stream leader, no quorum, a timeout)
 *   is not a failed node: the create is tried again every `retryMs` and the cycle starts as soon
 *   as one is acknowledged, or the sighting is refused as stale once it is older than a claim lives.
 *   Such a create may have been written all the same: a later one that finds the key held by this
 *   owner's value adopts it (`adopt`, a write from the revision read), so the node is not lost to
 *   this instance's own claim for a lifetime.
 * - While the cycle runs its claim is written again every `refreshMs`, from the revision last
 *   written. A refresh that fails for a reason other than someone else's write leaves the claim
 *   unconfirmed: it is tried again every `retryMs`, and the cycle's next RPC attempt
 *   ({@link attemptReady}) waits until one is acknowledged; so does an attempt when the last
 *   acknowledged write is older than the TTL less one refresh period. An attempt therefore starts
 *   only with most of a claim's life ahead of it, and nothing is sent to a node once this instance
 *   cannot show the bucket it still holds it.
 * - When a write finds someone else's revision, the claim has lapsed: the cycle is stopped at once
 *   (unsubscribed, which aborts its RPCs and helper) and fails with step `claim`. When no write has
 *   been acknowledged within the TTL of the last one sent, the claim has lapsed too and the cycle
 *   is stopped the same way, but the node is no failed node: it is claimed again (waiting for the
 *   bucket) and its cycle run afresh, unless the sighting is stale by then.
 * - A node this instance may have configured is configured by no other instance while this one
 *   can write the bucket. When the cycle fails with `nodeMayBeConfigured` (its `configure`, or the
 *   configured node's `restart`, went unanswered: the node was cut off mid-cycle), the claim is
 *   kept and refreshed and the cycle run again after `rerunMs` (reported as `kept`), as is each
 *   later run that fails with the node not answering, for one claim lifetime from the first such
 *   failure. Any other failure (the cycle's own stale check included), or the end of that
 *   lifetime, fails the cycle with that run's error and leaves the claim to age out, not deleted.
 * - When the cycle ends with the node leaving provisioning mode (`provisioned`, `shutdown`), the
 *   claim is written one last time and left to age out, so for one lifetime no other instance
 *   takes the node while it restarts; after any other ending, or an unsubscribe, it is deleted at
 *   once so another instance (or the next sighting) may take the node, unless the node may hold
 *   this instance's configuration (above). A delete the bucket cannot take is tried again every
 *   `retryMs` until it can be, the claim would have aged out, or the store is closed.
 * - A store failure never throws past the stage.
 */
export class NodeClaims implements ClaimStage {
  private readonly scheduler: SchedulerLike;
  private readonly refreshMs: number;
  private readonly retryMs: number;
  private readonly rerunMs: number;
  private readonly hooks: ClaimHooks;
  private readonly leases = new Map<string, Lease>();
  private heldCount = 0;

  constructor(private readonly options: NodeClaimsOptions) {
    if (!(options.ttlMs > 0)) throw new RangeError(`a claim needs a lifetime: ttlMs must be > 0, got ${options.ttlMs}`);
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.refreshMs = options.refreshMs ?? Math.max(1, Math.floor(options.ttlMs / 3));
    this.retryMs = options.retryMs ?? Math.max(1, Math.min(1000, Math.floor(options.ttlMs / 10)));
    this.rerunMs = options.rerunMs ?? Math.min(5000, this.refreshMs);
    this.hooks = options.hooks ?? {};
  }

  /** Claims run now. */
  get held(): number {
    return this.heldCount;
  }

  /**
   * The attempt boundary (P5's pause semantics, for the bucket): emits once, at once when the claim
   * on `identity` is confirmed and fresh (or there is none), otherwise as soon as a write is
   * acknowledged again. Unsubscribing stops the wait; a claim that lapses meanwhile stops the cycle.
   */
  attemptReady(identity: string): Observable<void> {
    return new Observable<void>((subscriber) => {
      const lease = this.leases.get(identity);
      const go = (): void => {
        subscriber.next();
        subscriber.complete();
      };
      if (lease === undefined || this.fresh(lease)) return go();
      lease.waiting.push(go);
      return () => {
        const at = lease.waiting.indexOf(go);
        if (at >= 0) lease.waiting.splice(at, 1);
      };
    });
  }

  private fresh(lease: Lease): boolean {
    return lease.confirmed && this.scheduler.now() - lease.lastSentAt <= this.options.ttlMs - this.refreshMs;
  }

  /** The ticket's cycle under a claim on its node. */
  around(ticket: HostTicket, cycle: () => Observable<CycleOutcome>): Observable<CycleOutcome> {
    const identity = ticket.key;
    const { store, owner, ttlMs } = this.options;
    const key = claimKey(identity);
    return new Observable<CycleOutcome>((subscriber) => {
      const stale = (): boolean => {
        const age = this.scheduler.now() - ticket.admittedAt;
        if (age <= ttlMs) return false;
        const why = `skipping node that's been waiting ${formatGoDuration(age)}: longer than a claim lives (${formatGoDuration(ttlMs)}), so another provisioner may have finished it`;
        subscriber.next(workFailed(new CycleError(identity, 'stale', why)));
        subscriber.complete();
        return true;
      };
      if (stale()) return undefined;
      let work = new Subscription();
      const lease: Lease = { lastSentAt: this.scheduler.now(), confirmed: true, waiting: [] };
      let revision = 0;
      let holding = false;
      let refreshing = false;
      let failures = 0;

      const confirmed = (sentAt: number): void => {
        lease.lastSentAt = sentAt;
        lease.confirmed = true;
        for (const go of lease.waiting.splice(0)) go();
      };
      const letGo = (release: boolean, keep = false): void => {
        if (!holding) return;
        holding = false;
        this.leases.delete(identity);
        this.setHeld(-1);
        if (keep) this.fireAndForget(identity, () => store.update(key, owner, revision), false);
        else if (release) this.fireAndForget(identity, () => store.release(key, revision), true);
      };
      const lapse = (why: string, takenOver: boolean): void => {
        letGo(false);
        work.unsubscribe();
        this.hooks.lapsed?.(identity, why);
        if (takenOver) {
          subscriber.next(workFailed(new CycleError(identity, 'claim', `the claim on ${identity} lapsed (${why}): its cycle was stopped`)));
          subscriber.complete();
          return;
        }
        // The bucket could not be written for a whole lifetime: no failed node, but claimed again
        // (waiting for the bucket) and its cycle run afresh, unless the sighting is stale by now.
        work = new Subscription();
        revision = 0;
        refreshing = false;
        lease.confirmed = true;
        if (!stale()) claim();
      };
      let deadline: Subscription | undefined;
      const armDeadline = (): void => {
        deadline?.unsubscribe();
        const left = lease.lastSentAt + ttlMs - this.scheduler.now();
        deadline = this.scheduler.schedule(
          () => lapse(`not written again within its ${formatGoDuration(ttlMs)} lifetime`, false),
          Math.max(0, left),
        );
        work.add(deadline);
      };
      const refresh = (): void => {
        if (refreshing || !holding) return;
        refreshing = true;
        const sentAt = this.scheduler.now();
        work.add(
          once(() => store.update(key, owner, revision)).subscribe({
            next: (next) => {
              refreshing = false;
              revision = next;
              confirmed(sentAt);
              armDeadline();
            },
            error: (error: unknown) => {
              refreshing = false;
              if (error instanceof ClaimHeldError) return lapse('another provisioner wrote it', true);
              lease.confirmed = false;
              this.hooks.failed?.('refresh', identity, error, failures++ === 0);
              work.add(this.scheduler.schedule(refresh, this.retryMs));
            },
          }),
        );
      };
      const start = (): void => {
        holding = true;
        this.leases.set(identity, lease);
        this.setHeld(1);
        this.hooks.won?.(identity, revision);
        armDeadline();
        work.add(timer(this.refreshMs, this.refreshMs, this.scheduler).subscribe(refresh));
        run();
      };
      // When a run first failed leaving the node possibly configured by this instance: from then
      // on the claim is kept, since another instance would configure the node a second time.
      let keptSince: number | undefined;
      const keeps = (error: unknown): boolean => {
        const mayBeConfigured = error instanceof CycleError && error.nodeMayBeConfigured;
        if (keptSince === undefined) {
          if (!mayBeConfigured) return false;
          keptSince = this.scheduler.now();
        } else if (!mayBeConfigured && !nodeDidNotAnswer(error)) return false;
        return this.scheduler.now() - keptSince < ttlMs;
      };
      const run = (): void => {
        let kept = false;
        const thisRun = new Subscription();
        work.add(thisRun);
        const rerun = (error: unknown): void => {
          kept = true;
          thisRun.unsubscribe();
          this.hooks.kept?.(identity, error);
          work.add(this.scheduler.schedule(run, this.rerunMs));
        };
        const end = (): void => {
          letGo(true, keptSince !== undefined);
          work.unsubscribe();
        };
        thisRun.add(
          cycle().subscribe({
            next: (outcome) => {
              if (kept) return;
              if (outcome.status === 'failed' && keeps(outcome.error)) return rerun(outcome.error);
              if (outcome.status === 'done' && LEAVING.has(outcome.value)) letGo(true, true);
              end();
              subscriber.next(outcome);
              subscriber.complete();
            },
            error: (error: unknown) => {
              if (keeps(error)) return rerun(error);
              end();
              subscriber.error(error);
            },
            complete: () => {
              if (kept) return;
              end();
              subscriber.complete();
            },
          }),
        );
      };

      // Set once a create's outcome is unknown (it failed, but not as held): it may have been
      // written all the same, and then the key is this owner's, to adopt rather than lose.
      let mayHaveCreated = false;
      const claim = (): void => {
        const sentAt = this.scheduler.now();
        const adopting = mayHaveCreated && store.adopt !== undefined;
        const write = (): ObservableInput<number> =>
          adopting
            ? from(store.create(key, owner)).pipe(
                catchError((e: unknown) => (e instanceof ClaimHeldError ? store.adopt!(key, owner) : throwError(() => e))),
              )
            : store.create(key, owner);
        work.add(
          once(write).subscribe({
            next: (created) => {
              revision = created;
              lease.lastSentAt = sentAt;
              start();
            },
            error: (error: unknown) => {
              if (error instanceof ClaimHeldError) {
                this.hooks.lost?.(identity);
                subscriber.next({ status: 'done', value: 'claimed' });
                subscriber.complete();
                return;
              }
              // The bucket cannot take the write now (no leader, no quorum): wait for it, claiming nothing.
              mayHaveCreated = true;
              this.hooks.failed?.('create', identity, error, failures++ === 0);
              work.add(
                this.scheduler.schedule(() => {
                  if (!stale()) claim();
                }, this.retryMs),
              );
            },
          }),
        );
      };
      claim();
      return () => {
        // Unsubscribed before the cycle ended (a hard stop, the pool torn down): free the node at
        // once, unless it may hold this instance's configuration.
        letGo(true, keptSince !== undefined);
        work.unsubscribe();
      };
    });
  }

  private setHeld(change: number): void {
    this.heldCount += change;
    this.hooks.held?.(this.heldCount);
  }

  /**
   * A write whose outcome nobody waits for (a release), its failures only reported. A delete the
   * bucket cannot take (no leader, no quorum) is tried again every `retryMs` until the claim would
   * have aged out anyway or the store is closed: a node given back is free as soon as the bucket
   * answers again, not a lifetime later.
   */
  private fireAndForget(identity: string, write: () => ObservableInput<unknown>, retry: boolean): void {
    const until = this.scheduler.now() + this.options.ttlMs;
    let failures = 0;
    const attempt = (): void => {
      once(write).subscribe({
        error: (error: unknown) => {
          this.hooks.failed?.('release', identity, error, failures++ === 0);
          if (retry && !(error instanceof ClaimStoreClosedError) && this.scheduler.now() + this.retryMs < until)
            this.scheduler.schedule(attempt, this.retryMs);
        },
      });
    };
    attempt();
  }
}
