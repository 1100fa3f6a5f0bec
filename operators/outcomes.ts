// What the pool needs of a ticket, and how a unit of work ends: the vocabulary of workerPool.
import { checkDelay } from './internal/checks.js';

/**
 * What the pool needs of a ticket: the {@link Ticket} of an {@link AdmissionLedger} fits.
 *
 * @group What the operators take and give
 */
export interface PoolTicket {
  /** Called when a worker picks the ticket up; `false` means it went stale and must be skipped. */
  start(): boolean;
  /** Frees the ticket's key. */
  free(): void;
  /** Told that the work is done and the key will be freed later (`freeAfter`). */
  hold?(): void;
}

/**
 * The work finished; free the key now, or `freeAfter` milliseconds from now.
 *
 * @group What the operators take and give
 */
export interface Done<R> {
  /** Tells a done outcome from the others. */
  readonly status: 'done';
  /** What the work produced. */
  readonly value: R;
  /**
   * Milliseconds the key stays held after the work (the ticket is told `hold()`), from 0 to
   * 2147483647 (the longest a timer waits); absent or 0: freed at once. Anything else (negative,
   * NaN, longer) makes the outcome invalid: the pool reports that ticket `failed` with a
   * `RangeError` and frees its key at once.
   */
  readonly freeAfter?: number;
}

/**
 * The work failed; the key is freed now so the next sighting can try again.
 *
 * @group What the operators take and give
 */
export interface Failed {
  /** Tells a failed outcome from the others. */
  readonly status: 'failed';
  /** What the work failed with (a {@link NoOutcomeError} when it completed without an outcome). */
  readonly error: unknown;
}

/**
 * The ticket was stale when a worker reached it: its work never ran.
 *
 * @group What the operators take and give
 */
export interface Skipped {
  /** Tells a skipped ticket from one whose work ran. */
  readonly status: 'skipped';
}

/**
 * How one unit of work ended.
 *
 * @group What the operators take and give
 */
export type Outcome<R> = Done<R> | Failed;

/**
 * One ticket's result, emitted when its work ends (or when it is skipped).
 *
 * @group What the operators take and give
 */
export interface PoolResult<T, R> {
  /** The ticket, as the pool took it. */
  readonly ticket: T;
  /** How its work ended, or that it was skipped. */
  readonly outcome: Outcome<R> | Skipped;
}

/**
 * Builds a {@link Done} outcome: the work produced `value`; its key is freed at once, or
 * `freeAfter` milliseconds later (the ticket is told `hold()` meanwhile).
 *
 * @example A node that restarts after its work keeps its key a minute, so the next discovery does not catch it halfway
 * ```ts
 * work: (ticket) => fromAbortable((signal) => provision(ticket.value, signal)).pipe(
 *   map((restarted) => workDone(restarted, { freeAfter: restarted ? 60_000 : 0 })),
 * )
 * ```
 *
 * @param value What the work produced.
 * @param options `freeAfter`: milliseconds the key stays held after the work, from 0 to
 * 2147483647 (the longest a timer waits). Absent or 0: freed at once.
 * @throws RangeError if `freeAfter` is negative, not a number, or longer than a timer can wait.
 *
 * @group What the operators take and give
 */
export function workDone<R>(value: R, options: { freeAfter?: number } = {}): Done<R> {
  const { freeAfter } = options;
  if (freeAfter === undefined) return { status: 'done', value };
  checkDelay('workDone', 'freeAfter', freeAfter);
  return { status: 'done', value, freeAfter };
}

/**
 * Builds a {@link Failed} outcome: the work failed with `error`, and its key is freed at once so
 * that the next sighting can try again. A unit of work that errors is a failed outcome already;
 * this is for work that turns a failure it caught into its outcome.
 *
 * @example
 * ```ts
 * work: (ticket) => fromAbortable((signal) => provision(ticket.value, signal).then(workDone, workFailed))
 * ```
 *
 * @param error What the work failed with.
 *
 * @group What the operators take and give
 */
export function workFailed(error: unknown): Failed {
  return { status: 'failed', error };
}
