import type { PoolTicket } from './outcomes.js';

/**
 * A {@link PoolTicket} for a plain value, made by {@link valueTicket}: always current, nothing to free.
 *
 * @group What the operators take and give
 */
export interface ValueTicket<V> extends PoolTicket {
  /** The value the ticket carries to the work and back in its result. */
  readonly value: V;
}

// One class, its methods on the prototype: a ticket per value costs one small object, not closures.
class PlainTicket<V> implements ValueTicket<V> {
  constructor(readonly value: V) {}

  start(): boolean {
    return true;
  }

  free(): void {}

  hold(): void {}
}

/**
 * Wraps a plain value as a ticket for {@link workerPool}, for work that needs no admission: the
 * ticket is never stale (its work always runs) and freeing it or holding it does nothing, so the
 * pool is a bounded, first come first served `mergeMap` whose results say how each unit ended.
 * The value is the ticket's `value`, in the work and in the result.
 *
 * Sightings that must be deduplicated (one ticket per key until its work ends) take an
 * {@link AdmissionLedger}'s tickets instead, through {@link admit}.
 *
 * @example Fetch a list of URLs, four at a time, each result saying how its fetch ended
 * ```ts
 * import { from, map } from 'rxjs';
 * import { fromAbortable, valueTicket, workDone, workerPool } from '@rxfleet/operators';
 *
 * from(['https://a.example/health', 'https://b.example/health'])
 *   .pipe(
 *     map(valueTicket),
 *     workerPool({
 *       concurrency: 4,
 *       work: (ticket) => fromAbortable((signal) => fetch(ticket.value, { signal }).then((r) => workDone(r.status))),
 *     }),
 *   )
 *   .subscribe(({ ticket, outcome }) => console.log(ticket.value, outcome.status));
 * ```
 *
 * @param value What the ticket carries.
 * @return A ticket that is always current and whose `free` and `hold` do nothing.
 *
 * @group What the operators take and give
 */
export function valueTicket<V>(value: V): ValueTicket<V> {
  return new PlainTicket(value);
}
