// What the pool needs of a ticket, and how a unit of work ends: the vocabulary of workerPool.

/** What the pool needs of a ticket: the {@link Ticket} of an {@link AdmissionLedger} fits. */
export interface PoolTicket {
  /** Called when a worker picks the ticket up; `false` means it went stale and must be skipped. */
  start(): boolean;
  /** Frees the ticket's key. */
  free(): void;
  /** Told that the work is done and the key will be freed later (`freeAfter`). */
  hold?(): void;
}

/** The work finished; free the key now, or `freeAfter` milliseconds from now. */
export interface Done<R> {
  /** Tells a done outcome from the others. */
  readonly status: 'done';
  /** What the work produced. */
  readonly value: R;
  /** Milliseconds the key stays held after the work (the ticket is told `hold()`); absent or 0: freed at once. */
  readonly freeAfter?: number;
}

/** The work failed; the key is freed now so the next sighting can try again. */
export interface Failed {
  /** Tells a failed outcome from the others. */
  readonly status: 'failed';
  /** What the work failed with (a {@link NoOutcomeError} when it completed without an outcome). */
  readonly error: unknown;
}

/** The ticket was stale when a worker reached it: its work never ran. */
export interface Skipped {
  /** Tells a skipped ticket from one whose work ran. */
  readonly status: 'skipped';
}

/** How one unit of work ended. */
export type Outcome<R> = Done<R> | Failed;

/** One ticket's result, emitted when its work ends (or when it is skipped). */
export interface PoolResult<T, R> {
  /** The ticket, as the pool took it. */
  readonly ticket: T;
  /** How its work ended, or that it was skipped. */
  readonly outcome: Outcome<R> | Skipped;
}

/** Builds a {@link Done} outcome. */
export function done<R>(value: R, options: { freeAfter?: number } = {}): Done<R> {
  return options.freeAfter === undefined ? { status: 'done', value } : { status: 'done', value, freeAfter: options.freeAfter };
}

/** Builds a {@link Failed} outcome. */
export function failed(error: unknown): Failed {
  return { status: 'failed', error };
}
