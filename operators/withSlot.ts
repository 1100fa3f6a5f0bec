import { MonoTypeOperatorFunction } from 'rxjs';
import { checkFunction } from './internal/checks.js';
import type { SlotPool } from './SlotPool.js';

/**
 * Runs the source in a slot of `pool`: the source is subscribed once the subscription holds a
 * slot, and the slot is given back when the source completes or errors (before that is passed on)
 * or when the subscription is unsubscribed. Waiters get slots first come, first served. See
 * {@link SlotPool} and {@link SlotPool.run}.
 *
 * ```
 * pool = new SlotPool(1); a = cold('-a|'), b = cold('-b|'), both subscribed at 0
 * a.pipe(withSlot(pool)): -a|
 * b.pipe(withSlot(pool)): ---b|     (b waits for a's slot)
 * ```
 *
 * Semantics:
 * - Values, the error and the completion of the source are passed on as they are.
 * - Unsubscribing unsubscribes the source (or leaves the line, if it still waits).
 * - Nothing of the user's is called but the source; a source that throws while it is subscribed
 *   errors the output, as rxjs does.
 * - A `pool` that is not a {@link SlotPool} is refused when the operator is made, with a `TypeError`.
 *
 * @example Two readers share four calls to one server
 * ```ts
 * const server = new SlotPool(4);
 * const web1$ = fromAbortable((signal) => incus.getInstance('default', 'web1', { signal })).pipe(withSlot(server));
 * const web2$ = fromAbortable((signal) => incus.getInstance('default', 'web2', { signal })).pipe(withSlot(server));
 * merge(web1$, web2$).subscribe(console.log); // at most four calls to the server at once, whoever makes them
 * ```
 *
 * @param pool The slots shared with whatever else runs in them.
 * @return A function that returns the source, run in a slot.
 * @throws TypeError (when called) if `pool` is not a slot pool.
 *
 * @group Operators
 */
export function withSlot<T>(pool: SlotPool): MonoTypeOperatorFunction<T> {
  checkFunction('withSlot', 'pool.run', (pool as Partial<SlotPool> | undefined)?.run);
  return (source) => pool.run(() => source);
}
