import type { SchedulerLike } from 'rxjs';
import type { ClaimStore } from './claimStore';

/** What the claim stage reports, for metrics and logs. */
export interface ClaimHooks {
  /** A claim on the node was written at `revision`: its cycle runs. */
  won?(identity: string, revision: number): void;
  /** Another instance holds the node: its cycle was not run. */
  lost?(identity: string): void;
  /** A claim held through a cycle was lost (taken, or not refreshed within its lifetime): the cycle was stopped. */
  lapsed?(identity: string, why: string): void;
  /**
   * A write could not be made for another reason (no stream leader, no quorum, the broker
   * unreachable, no rights): `create` waits for the bucket, `refresh` holds the cycle at its next
   * attempt; `release` (a delete) is tried again until it can be made. `first` is true for the
   * first such failure of a cycle (or of a release).
   */
  failed?(operation: 'create' | 'refresh' | 'release', identity: string, error: unknown, first?: boolean): void;
  /** Claims held now. */
  held?(count: number): void;
  /**
   * A cycle that may have left its node configured failed because the node did not answer: the
   * claim is kept and the cycle run again after `rerunMs` (see `NodeClaims`).
   */
  kept?(identity: string, error: unknown): void;
}

/** Options for `NodeClaims` (claims.ts). */
export interface NodeClaimsOptions {
  store: ClaimStore;
  /** The claim's value: this instance's identity, so an administrator can see who holds what. */
  owner: string;
  /** The bucket's max age, ms (see `readClaimsTtl`). */
  ttlMs: number;
  /** How often a held claim is written again. Default a third of the TTL. */
  refreshMs?: number;
  /** The pause before a write the bucket could not take is tried again. Default a tenth of the TTL, at most 1 s. */
  retryMs?: number;
  /** The pause before a kept node's cycle is run again. Default the refresh period, at most 5 s (the RPC retries' longest pause). */
  rerunMs?: number;
  scheduler?: SchedulerLike;
  hooks?: ClaimHooks;
}
