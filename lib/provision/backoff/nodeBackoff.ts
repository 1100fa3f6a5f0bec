import { Outcome } from '@rxfleet/operators';
import { RpcConnectionLostError, findCause } from '../../choria/errors';
import { CycleError, CycleStep } from '../cycle/cycleError';
import type { SightingSource } from '../sightings/sighting';

/**
 * Failures that are not the node's: a sighting that waited too long in the queue, a claim another
 * instance took or the bucket could not confirm, a cycle stopped by shutdown. They say nothing
 * about whether the node can be provisioned, so they do not make it wait.
 */
const NOT_THE_NODES: ReadonlySet<CycleStep> = new Set<CycleStep>(['stale', 'claim', 'aborted']);

/** Sightings that come from the node itself starting: it may have been fixed, so it is tried at once. */
const FROM_THE_NODE: ReadonlySet<SightingSource> = new Set<SightingSource>(['event', 'incus']);

/** One failing node's backoff. Times are on the caller's clock (the pipeline's scheduler). */
export interface BackoffEntry {
  /** Cycles failed in a row. */
  readonly failures: number;
  /** When the first of them ended. */
  readonly failingSince: number;
  /** When the last of them ended. */
  readonly lastFailedAt: number;
  /** No admission before this. */
  readonly until: number;
}

/** What {@link NodeBackoff.admits} decided for one sighting. */
export type BackoffVerdict =
  { readonly admit: true; readonly reset?: BackoffEntry } | { readonly admit: false; readonly entry: BackoffEntry };

/** Options for {@link NodeBackoff}. */
export interface NodeBackoffOptions {
  /** The unit of the waits: the discovery interval (see {@link backoffDelay}). */
  baseMs: number;
  /** The longest wait (`rxfleet.failure_backoff`); 0 turns the backoff off: every sighting is admitted, as upstream. */
  ceilingMs: number;
  /** Told the number of failing nodes whenever it changes (the gauge). */
  onSize?: (failing: number) => void;
}

/**
 * The wait after `failures` failed cycles in a row: (2^(k-1) - 1) times the base, never past the
 * ceiling. With the discovery interval as the base, a node is sighted again at the next round
 * after its first failure (no wait, as upstream), and skips 1, 3, 7 ... rounds after the next
 * ones: a failure ends a little after its round began, so a wait of whole intervals from it
 * always lets the round that many intervals later by. Pure, so the records say the same wait as
 * the pipeline applies.
 */
export function backoffDelay(failures: number, baseMs: number, ceilingMs: number): number {
  if (failures < 1 || ceilingMs <= 0) return 0;
  // 2^30 intervals is past any ceiling; the cap keeps the arithmetic finite.
  return Math.min(ceilingMs, baseMs * (2 ** Math.min(30, failures - 1) - 1));
}

/**
 * Whether a cycle's outcome is a failure of the node (DECISIONS P22): a failed cycle, but for the
 * steps that say nothing about the node (stale, claim, aborted) and a broker connection lost under
 * it. `undefined`: the outcome changes nothing (a node claimed by another instance or locked by
 * another provisioner).
 */
export function failureOfNode(outcome: Outcome<unknown>): boolean | undefined {
  if (outcome.status === 'done') {
    const value = outcome.value;
    return value === 'claimed' || value === 'locked' ? undefined : false;
  }
  const error = outcome.error;
  if (error instanceof CycleError && NOT_THE_NODES.has(error.step)) return undefined;
  // The broker's connection dropped under the cycle: the node may be fine.
  if (findCause(error, (e): e is RpcConnectionLostError => e instanceof RpcConnectionLostError) !== undefined) return undefined;
  return true;
}

/**
 * The per-node failure backoff (DECISIONS P22): a node whose cycles keep failing (a helper that
 * defers for days, an RPC that always times out) is admitted again only after a wait that grows
 * with each failure ({@link backoffDelay}: the next round after the first, then 1, 3, 7 ... rounds
 * skipped) up to the ceiling, instead of at every sighting.
 * A success forgets it; a sighting from the node itself (its startup event, its Incus instance
 * coming up) forgets it too and is admitted at once: the node restarted, and may have been fixed.
 *
 * A table the pipeline owns, decided on in pure methods: `admits` before admission, `settle` when
 * a cycle ends, `prune` at each discovery round. Nodes that stop being sighted leave the table a
 * ceiling after their wait ended, so it holds the failing fleet, never every node ever seen.
 */
export class NodeBackoff {
  private readonly entries = new Map<string, BackoffEntry>();
  private readonly baseMs: number;
  private readonly ceilingMs: number;

  constructor(private readonly options: NodeBackoffOptions) {
    if (!(options.baseMs > 0)) throw new RangeError(`NodeBackoff: baseMs must be > 0, got ${options.baseMs}`);
    if (!(options.ceilingMs >= 0)) throw new RangeError(`NodeBackoff: ceilingMs must be >= 0, got ${options.ceilingMs}`);
    this.baseMs = options.baseMs;
    this.ceilingMs = options.ceilingMs;
  }

  /** Whether it does anything (a ceiling above zero). */
  get enabled(): boolean {
    return this.ceilingMs > 0;
  }

  /** Nodes whose last cycles failed. */
  get failing(): number {
    return this.entries.size;
  }

  /** The node's backoff, if its last cycle failed. */
  entry(identity: string): BackoffEntry | undefined {
    return this.entries.get(identity);
  }

  /** Every failing node and its backoff, in the order of their last failure. */
  list(): IterableIterator<[string, BackoffEntry]> {
    return this.entries.entries();
  }

  /** The wait after `failures` failures in a row, with this table's base and ceiling. */
  delay(failures: number): number {
    return backoffDelay(failures, this.baseMs, this.ceilingMs);
  }

  /**
   * Whether a sighting may go on to admission at `now`: always with no entry, once the wait is
   * over, or when it comes from the node itself (the entry is then forgotten, and returned as
   * `reset`).
   */
  admits(identity: string, via: SightingSource, now: number): BackoffVerdict {
    const entry = this.entries.get(identity);
    if (entry === undefined) return { admit: true };
    if (FROM_THE_NODE.has(via)) {
      this.remove(identity);
      return { admit: true, reset: entry };
    }
    if (now >= entry.until) return { admit: true };
    return { admit: false, entry };
  }

  /**
   * A cycle of the node ended at `now` with `outcome`: a failure of the node lengthens its wait, a
   * success forgets it, anything else changes nothing. Returns the node's entry after the change.
   */
  settle(identity: string, outcome: Outcome<unknown>, now: number): BackoffEntry | undefined {
    if (!this.enabled) return undefined;
    const failed = failureOfNode(outcome);
    if (failed === undefined) return this.entries.get(identity);
    if (!failed) {
      this.remove(identity);
      return undefined;
    }
    const before = this.entries.get(identity);
    const failures = (before?.failures ?? 0) + 1;
    const entry: BackoffEntry = {
      failures,
      failingSince: before?.failingSince ?? now,
      lastFailedAt: now,
      until: now + this.delay(failures),
    };
    // Delete first, so the Map's order stays the order of last failure.
    this.entries.delete(identity);
    this.entries.set(identity, entry);
    if (before === undefined) this.options.onSize?.(this.entries.size);
    return entry;
  }

  /** Forgets nodes whose wait ended more than a ceiling ago without a sighting admitted since. */
  prune(now: number): void {
    let removed = false;
    for (const [identity, entry] of this.entries) {
      if (entry.until + this.ceilingMs < now) {
        this.entries.delete(identity);
        removed = true;
      }
    }
    if (removed) this.options.onSize?.(this.entries.size);
  }

  private remove(identity: string): void {
    if (this.entries.delete(identity)) this.options.onSize?.(this.entries.size);
  }
}
