import { MonoTypeOperatorFunction } from 'rxjs';
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
 *
 * @param pool The slots shared with whatever else runs in them.
 * @return A function that returns the source, run in a slot.
 */
export function withSlot<T>(pool: SlotPool): MonoTypeOperatorFunction<T> {
  return (source) => pool.run(() => source);
}
