import { Observable, OperatorFunction, SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { checkDelay, checkFunction, checkOptionalFunction } from './internal/checks.js';
import { subscribeWith } from './internal/OperatorSubscriber.js';

/**
 * Options for {@link debounceByKey}: `T` is what comes in, `K` its key, `M` what a superseded value
 * goes out as (`T` itself unless `superseded` marks it as something else).
 *
 * @group Options
 */
export interface DebounceByKeyConfig<T, K, M = T> {
  /** The key a value collapses under; `undefined` means the value is about nothing and passes straight through. */
  key: (value: T) => K | undefined;
  /**
   * Quiet period in ms that closes a key's window, from 0 to 2147483647 (the longest a timer
   * waits); every collapsible arrival slides it. Default 250.
   */
  window?: number;
  /** Whether a value may be collapsed. A value that may not flushes its key's window first. Default: every value. */
  collapsible?: (value: T) => boolean;
  /**
   * How a held value is marked when a newer one supersedes it (for example "dropped by debounce"):
   * what it returns goes out in its place, and its type is part of the output's (`T | M`), so a
   * mark of a type of its own (`{ ...e, dropped: 'debounce' }`) is not lost to the types.
   * Absent, or returning `undefined`: the superseded value is not emitted at all.
   */
  superseded?: (value: T) => M | undefined;
  /** Where the windows are timed. Default `asyncScheduler`; pass a `TestScheduler` in specs. */
  scheduler?: SchedulerLike;
}

/** One key's open window: the newest value not yet emitted, if any, and when the window closes. */
interface KeyWindow<T> {
  held: { value: T } | undefined;
  deadline: number;
  timer: Subscription;
}

/**
 * Collapses bursts per key: the first value of a burst goes out at once, the last goes out once the
 * key has been quiet for `window` ms, and each one in the middle goes out marked by `superseded`
 * (or not at all) the moment a newer one replaces it.
 *
 * Why per key and sliding: a fleet emits bursts about one subject (create, start, update, update)
 * while other subjects stay live; one global debounce would hold every key hostage to the noisiest
 * one. The leading edge goes out at once so a lone change costs no latency, and the trailing value
 * is what the subject looks like once it settles. A superseded middle is reported rather than
 * silently lost when the caller asks for it, because whoever counts events must be able to account
 * for every one. Only collapsible values are ever held: a value that must not be collapsed (an error,
 * a delete) first flushes what its key holds, so it never overtakes an older value of the same key.
 *
 * ```
 * window = 3 ms; a, b, c, d share a key, p has its own; superseded = upper case
 * source: -a-b-c------p-d--|
 * result: -a---B--c---p-d--|
 * ```
 * (b is held, then superseded by c and emitted as B; c leaves 3 ms after it arrived; d opens a new
 * window, and its burst of one is not reported twice; nothing is held at completion)
 *
 * Semantics:
 * - A collapsible value with no open window for its key is emitted at once and opens a window that
 *   closes `window` ms later. A collapsible value for an open window is held; whatever the window
 *   held before is emitted at once through `superseded`, and the window closes `window` ms after
 *   this newest arrival. A burst that never goes quiet never emits its trailing value.
 * - When a window closes its held value, if any, is emitted; a window that held nothing closes
 *   silently, so a burst of one is reported once.
 * - A value `collapsible` rejects closes its key's window (emitting the held value, if any) and is
 *   then emitted. A value whose key is `undefined` is emitted at once and touches no window.
 * - Source completion emits every held value, in the order their windows were opened (oldest window
 *   first), then completes.
 * - Source error errors at once: held values are lost, as with `debounceTime`.
 * - An error thrown by `key`, `collapsible` or `superseded` errors the output (as rxjs's operators
 *   do when a callback throws), unsubscribing the source and cancelling every window.
 * - Unsubscribing unsubscribes the source and cancels every window's timer; held values are dropped.
 * - Bad options are refused when the operator is made: a `window` that is negative, not a number
 *   or longer than a timer can wait is a `RangeError`; `key`, `collapsible` or `superseded` not a
 *   function a `TypeError`.
 * - The output's type is `T | M`: what came in, or what `superseded` made of it.
 *
 * @example Collapse instance events per project/name for 250 ms, marking the superseded ones
 * ```ts
 * events$.pipe(
 *   debounceByKey({
 *     key: (e) => (e.name ? `${e.project}/${e.name}` : undefined),
 *     collapsible: (e) => e.error === undefined && e.action !== 'instance-deleted',
 *     superseded: (e) => ({ ...e, dropped: 'debounce' }),
 *   }),
 * );
 * ```
 *
 * @param config `key` (required), `window`, `collapsible`, `superseded`, `scheduler`.
 * @return A function that returns an Observable of the values that survived the windows, and of
 * the superseded ones as `superseded` marked them.
 * @throws RangeError or TypeError (when called) for a bad option, as above.
 *
 * @group Operators
 */
export function debounceByKey<T, K, M = T>(config: DebounceByKeyConfig<T, K, M>): OperatorFunction<T, T | M> {
  const { key, window = 250, collapsible, superseded, scheduler = asyncScheduler } = config;
  checkFunction('debounceByKey', 'key', key);
  checkDelay('debounceByKey', 'window', window);
  checkOptionalFunction('debounceByKey', 'collapsible', collapsible);
  checkOptionalFunction('debounceByKey', 'superseded', superseded);
  return (source) =>
    new Observable<T | M>((subscriber) => {
      // Insertion order is window-opening order: a closed window is deleted, so a key that opens a
      // new window goes to the back. Completion flushes in this order.
      const windows = new Map<K, KeyWindow<T>>();
      // Timers live only in the windows map, not in the subscriber: RxJS removes a finished child
      // from its parent with indexOf + splice, which made 10k open windows quadratic.
      subscriber.add(() => {
        for (const open of windows.values()) open.timer.unsubscribe();
        windows.clear();
      });

      const close = (k: K, open: KeyWindow<T>): void => {
        windows.delete(k);
        open.timer.unsubscribe();
        const held = open.held;
        open.held = undefined;
        if (held !== undefined) subscriber.next(held.value);
      };

      // One timer per key, armed for the deadline it saw; a slid deadline is re-armed when the old
      // one fires rather than on every arrival, so a long burst costs one timer per window, not one
      // per value.
      const arm = (k: K, open: KeyWindow<T>, delay: number): void => {
        open.timer = scheduler.schedule(() => {
          open.timer.unsubscribe();
          if (windows.get(k) !== open) return;
          const remaining = open.deadline - scheduler.now();
          if (remaining > 0) arm(k, open, remaining);
          else close(k, open);
        }, delay);
      };

      const accept = (value: T): void => {
        const k = key(value);
        if (k === undefined) {
          subscriber.next(value);
          return;
        }
        const open = windows.get(k);
        if (collapsible !== undefined && !collapsible(value)) {
          if (open !== undefined) close(k, open);
          subscriber.next(value);
          return;
        }
        if (open === undefined) {
          const opened: KeyWindow<T> = { held: undefined, deadline: scheduler.now() + window, timer: Subscription.EMPTY };
          windows.set(k, opened);
          arm(k, opened, window);
          subscriber.next(value);
          return;
        }
        const previous = open.held;
        open.held = { value };
        open.deadline = scheduler.now() + window;
        if (previous !== undefined && superseded !== undefined) {
          const marked = superseded(previous.value);
          if (marked !== undefined) subscriber.next(marked);
        }
      };

      subscribeWith(subscriber, source, {
        next: accept,
        complete: () => {
          for (const [k, open] of [...windows]) close(k, open);
          subscriber.complete();
        },
      });
    });
}
