import { Observable, SchedulerLike, asyncScheduler } from 'rxjs';
import { claimKey } from './claimStore';
import { ClaimHooks, NodeClaimsOptions } from './claimOptions';
import { ClaimLeases } from './claimLeases';
import type { ClaimRules } from './claimMachine';
import { driveClaim } from './claimDriver';
import type { CycleOutcome } from '../cycle/cycleResult';
import type { HostTicket } from '../sightings/sighting';

export { ClaimHeldError, ClaimStoreClosedError, claimKey, readClaimsTtl, rotateRound } from './claimStore';
export type { ClaimStore, ReadClaimsTtlOptions } from './claimStore';
export type { ClaimHooks, NodeClaimsOptions } from './claimOptions';

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
 * Each ticket's claim is the state machine of claimMachine.ts (`stepClaim`, tabled in
 * docs/provisioner/high-availability.md), carried out by claimDriver.ts; the claims held are
 * {@link ClaimLeases}, which the attempt boundary reads.
 *
 * It is the pipeline's `ClaimStage` (`pipeline.ts`), which names what the pipeline needs from it;
 * the port stays with the pipeline, so this room imports nothing above it.
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
 * - A store failure never throws past the stage; a hook that throws errors the stage's output once.
 */
export class NodeClaims {
  private readonly scheduler: SchedulerLike;
  private readonly rules: Omit<ClaimRules, 'identity' | 'admittedAt'>;
  private readonly hooks: ClaimHooks;
  private readonly leases: ClaimLeases;

  constructor(private readonly options: NodeClaimsOptions) {
    const { ttlMs } = options;
    if (!(ttlMs > 0)) throw new RangeError(`a claim needs a lifetime: ttlMs must be > 0, got ${ttlMs}`);
    this.scheduler = options.scheduler ?? asyncScheduler;
    const refreshMs = options.refreshMs ?? Math.max(1, Math.floor(ttlMs / 3));
    const retryMs = options.retryMs ?? Math.max(1, Math.min(1000, Math.floor(ttlMs / 10)));
    const rerunMs = options.rerunMs ?? Math.min(5000, refreshMs);
    this.rules = { ttlMs, refreshMs, retryMs, rerunMs };
    this.hooks = options.hooks ?? {};
    this.leases = new ClaimLeases(this.scheduler, ttlMs - refreshMs, (count) => this.hooks.held?.(count));
  }

  /** Claims run now. */
  get held(): number {
    return this.leases.held;
  }

  /**
   * The attempt boundary (P5's pause semantics, for the bucket): emits once, at once when the claim
   * on `identity` is confirmed and fresh (or there is none), otherwise as soon as a write is
   * acknowledged again. Unsubscribing stops the wait; a claim that lapses meanwhile stops the cycle.
   */
  attemptReady(identity: string): Observable<void> {
    return this.leases.ready(identity);
  }

  /** The ticket's cycle under a claim on its node: the machine of claimMachine.ts, driven by claimDriver.ts. */
  around(ticket: HostTicket, cycle: () => Observable<CycleOutcome>): Observable<CycleOutcome> {
    const { store, owner } = this.options;
    return driveClaim({
      rules: { ...this.rules, identity: ticket.key, admittedAt: ticket.admittedAt },
      key: claimKey(ticket.key),
      owner,
      store,
      scheduler: this.scheduler,
      hooks: this.hooks,
      leases: this.leases,
      cycle,
    });
  }
}
