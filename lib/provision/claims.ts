import { Observable, ObservableInput, SchedulerLike, Subscription, asyncScheduler, timer } from 'rxjs';
import { failed } from '@rxfleet/operators';
import { formatGoDuration } from '../choria/duration';
import type { ClaimStage, CycleOutcome, CycleResult, HostTicket } from './pipeline';
import { CycleError } from './provisionCycle';
import { ClaimHeldError, ClaimStore, claimKey, once } from './claimStore';

export { ClaimHeldError, claimKey, readClaimsTtl, rotateRound } from './claimStore';
export type { ClaimStore, ReadClaimsTtlOptions } from './claimStore';

/** What the claim stage reports, for metrics and logs. */
export interface ClaimHooks {
  won?(identity: string): void;
  /** Another instance holds the node: its cycle was not run. */
  lost?(identity: string): void;
  /** A claim held through a cycle was lost (taken, or not refreshed within its lifetime): the cycle was stopped. */
  lapsed?(identity: string, why: string): void;
  /**
   * A write could not be made for another reason (no stream leader, no quorum, the broker
   * unreachable, no rights): `create` waits for the bucket, `refresh` holds the cycle at its next
   * attempt; `release` is only reported. `first` is true for the first such failure of a cycle.
   */
  failed?(operation: 'create' | 'refresh' | 'release', identity: string, error: unknown, first?: boolean): void;
  /** Claims held now. */
  held?(count: number): void;
}

/** Options for {@link NodeClaims}. */
export interface NodeClaimsOptions {
  store: ClaimStore;
  /** The claim's value: this instance's identity, so an administrator can see who holds what. */
  owner: string;
  /** The bucket's max age, ms (see {@link readClaimsTtl}). */
  ttlMs: number;
  /** How often a held claim is written again. Default a third of the TTL. */
  refreshMs?: number;
  /** The pause before a write the bucket could not take is tried again. Default a tenth of the TTL, at most 1 s. */
  retryMs?: number;
  scheduler?: SchedulerLike;
  hooks?: ClaimHooks;
}

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
 * - While the cycle runs its claim is written again every `refreshMs`, from the revision last
 *   written. A refresh that fails for a reason other than someone else's write leaves the claim
 *   unconfirmed: it is tried again every `retryMs`, and the cycle's next RPC attempt
 *   ({@link attemptReady}) waits until one is acknowledged; so does an attempt when the last
 *   acknowledged write is older than the TTL less one refresh period. An attempt therefore starts
 *   only with most of a claim's life ahead of it, and nothing is sent to a node once this instance
 *   cannot show the bucket it still holds it.
 * - When a write finds someone else's revision, or no write has been acknowledged within the TTL
 *   of the last one sent, the claim has lapsed: the cycle is stopped at once (unsubscribed, which
 *   aborts its RPCs and helper) and fails with step `claim`.
 * - When the cycle ends with the node leaving provisioning mode (`provisioned`, `shutdown`), the
 *   claim is written one last time and left to age out, so for one lifetime no other instance
 *   takes the node while it restarts; after any other ending, or an unsubscribe, it is deleted at
 *   once so another instance (or the next sighting) may take the node.
 * - A store failure never throws past the stage.
 */
export class NodeClaims implements ClaimStage {
  private readonly scheduler: SchedulerLike;
  private readonly refreshMs: number;
  private readonly retryMs: number;
  private readonly hooks: ClaimHooks;
  private readonly leases = new Map<string, Lease>();
  private heldCount = 0;

  constructor(private readonly options: NodeClaimsOptions) {
    if (!(options.ttlMs > 0)) throw new RangeError(`a claim needs a lifetime: ttlMs must be > 0, got ${options.ttlMs}`);
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.refreshMs = options.refreshMs ?? Math.max(1, Math.floor(options.ttlMs / 3));
    this.retryMs = options.retryMs ?? Math.max(1, Math.min(1000, Math.floor(options.ttlMs / 10)));
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
        subscriber.next(failed(new CycleError(identity, 'stale', why)));
        subscriber.complete();
        return true;
      };
      if (stale()) return undefined;
      const work = new Subscription();
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
        if (keep) this.fireAndForget('release', identity, () => store.update(key, owner, revision));
        else if (release) this.fireAndForget('release', identity, () => store.release(key, revision));
      };
      const lapse = (why: string): void => {
        letGo(false);
        work.unsubscribe();
        this.hooks.lapsed?.(identity, why);
        subscriber.next(failed(new CycleError(identity, 'claim', `the claim on ${identity} lapsed (${why}): its cycle was stopped`)));
        subscriber.complete();
      };
      let deadline: Subscription | undefined;
      const armDeadline = (): void => {
        deadline?.unsubscribe();
        const left = lease.lastSentAt + ttlMs - this.scheduler.now();
        deadline = this.scheduler.schedule(
          () => lapse(`not written again within its ${formatGoDuration(ttlMs)} lifetime`),
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
              if (error instanceof ClaimHeldError) return lapse('another provisioner wrote it');
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
        this.hooks.won?.(identity);
        armDeadline();
        work.add(timer(this.refreshMs, this.refreshMs, this.scheduler).subscribe(refresh));
        work.add(
          cycle().subscribe({
            next: (outcome) => {
              letGo(true, outcome.status === 'done' && LEAVING.has(outcome.value));
              work.unsubscribe();
              subscriber.next(outcome);
              subscriber.complete();
            },
            error: (error: unknown) => {
              letGo(true);
              work.unsubscribe();
              subscriber.error(error);
            },
            complete: () => {
              letGo(true);
              work.unsubscribe();
              subscriber.complete();
            },
          }),
        );
      };

      const claim = (): void => {
        const sentAt = this.scheduler.now();
        work.add(
          once(() => store.create(key, owner)).subscribe({
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
        // Unsubscribed before the cycle ended (a hard stop, the pool torn down): free the node at once.
        letGo(true);
        work.unsubscribe();
      };
    });
  }

  private setHeld(change: number): void {
    this.heldCount += change;
    this.hooks.held?.(this.heldCount);
  }

  /** A write whose outcome nobody waits for (a release): its failure is only reported. */
  private fireAndForget(operation: 'release', identity: string, write: () => ObservableInput<unknown>): void {
    once(write).subscribe({ error: (error: unknown) => this.hooks.failed?.(operation, identity, error) });
  }
}
