// What the pool needs of a ticket, and how a unit of work ends: the vocabulary of workerPool.

/** What the pool needs of a ticket: the {@link Ticket} of an {@link AdmissionLedger} fits. */
export interface PoolTicket {
  /** Called when a worker picks the ticket up; `false` means it went stale and must be skipped. */
  start(): boolean;
  /** Frees the ticket's key. */
  release(): void;
  /** Told that the work is done and the key will be released later (`releaseAfter`). */
  hold?(): void;
}

/** The work finished; release the key now, or `releaseAfter` milliseconds from now. */
export interface Done<R> {
  readonly status: 'done';
  readonly value: R;
  readonly releaseAfter?: number;
}

/** The work failed; the key is released now so the next sighting can try again. */
export interface Failed {
  readonly status: 'failed';
  readonly error: unknown;
}

/** The ticket was stale when a worker reached it: its work never ran. */
export interface Skipped {
  readonly status: 'skipped';
}

/** How one unit of work ended. */
export type Outcome<R> = Done<R> | Failed;

/** One ticket's result, emitted when its work ends (or when it is skipped). */
export interface PoolResult<T, R> {
  readonly ticket: T;
  readonly outcome: Outcome<R> | Skipped;
}

/** Builds a {@link Done} outcome. */
export function done<R>(value: R, options: { releaseAfter?: number } = {}): Done<R> {
  return options.releaseAfter === undefined ? { status: 'done', value } : { status: 'done', value, releaseAfter: options.releaseAfter };
}

/** Builds a {@link Failed} outcome. */
export function failed(error: unknown): Failed {
  return { status: 'failed', error };
}
