import { Observable, OperatorFunction, SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { checkDelay } from './internal/checks.js';
import { subscribeWith } from './internal/OperatorSubscriber.js';

/**
 * Options for {@link collectUntilIdle}.
 *
 * @group Options
 */
export interface CollectUntilIdleConfig {
  /** Ms of silence after the last value that end the collection, from 0 to 2147483647. Default 300. */
  idle?: number;
  /** Ms after subscription at which the collection ends whatever is still arriving, from 0 to 2147483647. Default 2000. */
  timeout?: number;
  /** Where the collection is timed. Default `asyncScheduler`; pass a `TestScheduler` in specs. */
  scheduler?: SchedulerLike;
}

/**
 * Gathers the source's values and emits them once, as an array, when `idle` ms pass without a new
 * one or `timeout` ms after subscription, whichever comes first; then completes and unsubscribes
 * the source.
 *
 * Why: a broadcast question ("who is out there?") has no last answer, only answers that stop
 * coming. Waiting out a fixed timeout makes every question cost the worst case; stopping a short
 * quiet period after the last answer returns as soon as the fleet has spoken, and the overall
 * timeout bounds a fleet that never stops talking. Before the first answer only the timeout
 * applies: silence then means "nobody has answered yet", not "everybody has" (this is Choria's
 * sliding-window discovery: a 300 ms window, reset by each reply, within a 2 s limit).
 *
 * ```
 * idle = 3 ms, timeout = 10 ms
 * source: --a-b-c--------
 * result: ---------(x|)        x = [a, b, c]   (3 ms after c)
 *
 * source: -----a-b-c-d-e-f-
 * result: ----------(y|)       y = [a, b, c]   (the timeout, 10 ms after subscription)
 * ```
 *
 * Semantics:
 * - The idle period starts with the first value and restarts with each one.
 * - When it finishes, by idle or by timeout, the source is unsubscribed before the array is emitted;
 *   the array is emitted once, then the output completes.
 * - Source completion emits what was gathered (possibly `[]`) at once and completes. A timeout with
 *   nothing gathered emits `[]` too.
 * - Source error errors at once: what was gathered is lost.
 * - Unsubscribing unsubscribes the source and cancels both timers.
 * - It calls no function of yours, so nothing of yours can throw inside it.
 * - Bad options are refused when the operator is made: an `idle` or `timeout` that is negative,
 *   not a number or longer than a timer can wait (2147483647 ms) is a `RangeError`.
 *
 * @example Collect discovery replies, at most 2 s, stopping 300 ms after the last reply
 * ```ts
 * replies$.pipe(
 *   map((reply) => reply.sender),
 *   collectUntilIdle({ idle: 300, timeout: 2000 }),
 * ).subscribe((identities) => identities.forEach(admit));
 * ```
 *
 * @param config `idle`, `timeout`, `scheduler`.
 * @return A function that returns an Observable of one array, then completion.
 * @throws RangeError (when called) for a bad `idle` or `timeout`, as above.
 *
 * @group Operators
 */
export function collectUntilIdle<T>(config: CollectUntilIdleConfig = {}): OperatorFunction<T, T[]> {
  const { idle = 300, timeout = 2000, scheduler = asyncScheduler } = config;
  checkDelay('collectUntilIdle', 'idle', idle);
  checkDelay('collectUntilIdle', 'timeout', timeout);
  return (source) =>
    new Observable<T[]>((subscriber) => {
      const gathered: T[] = [];
      let done = false;
      let lastAt = 0;
      let idleTimer: Subscription | undefined;
      // A container rather than the subscription itself: the source may finish us while subscribing.
      const upstream = new Subscription();

      const finish = (): void => {
        if (done) return;
        done = true;
        // Stop listening before the answer goes out, so nothing arrives while the consumer reads it.
        upstream.unsubscribe();
        subscriber.next(gathered);
        subscriber.complete();
      };

      // One idle timer per collection, not one per value: when it fires early (a value came in
      // meanwhile) it re-arms for the rest of the period.
      const armIdle = (delay: number): void => {
        idleTimer = scheduler.schedule(() => {
          idleTimer?.unsubscribe();
          idleTimer = undefined;
          const remaining = lastAt + idle - scheduler.now();
          if (remaining > 0) armIdle(remaining);
          else finish();
        }, delay);
        subscriber.add(idleTimer);
      };

      subscriber.add(scheduler.schedule(finish, timeout));
      subscriber.add(upstream);
      subscribeWith(
        subscriber,
        source,
        {
          next: (value) => {
            if (done) return;
            gathered.push(value);
            lastAt = scheduler.now();
            if (idleTimer === undefined) armIdle(idle);
          },
          complete: finish,
        },
        upstream,
      );
    });
}
