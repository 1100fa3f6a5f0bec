import { Observable, OperatorFunction, SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { subscribeWith } from './internal/OperatorSubscriber';

/** The outcome of one attempt at a key, as {@link retryLadder} consumes it. */
export interface RepairReport<K> {
  key: K;
  ok: boolean;
}

/** Options for {@link retryLadder}. */
export interface RetryLadderConfig {
  /** Delay in ms before each of the first `fastAttempts` retries of a key. Default 1000. */
  fast?: number;
  /** How many retries of a key are fast, counted since its last success. Default 3. */
  fastAttempts?: number;
  /** Delay in ms before every later retry, for as long as the key keeps failing. Default 5000. */
  slow?: number;
  /**
   * Told the number of keys with a retry pending whenever it changes (for a gauge), including 0 when
   * the subscription ends with retries still pending.
   */
  onPendingChange?: (pending: number) => void;
  /** Where the retries are timed. Default `asyncScheduler`; pass a `TestScheduler` in specs. */
  scheduler?: SchedulerLike;
}

/** What one key is owed: retries scheduled since its last success, and the one pending, if any. */
interface Ladder {
  scheduled: number;
  pending: Subscription | undefined;
}

/**
 * Turns reports of attempts on keys into a per-key repair schedule: after a failure the key is
 * emitted ("try it again now") `fast` ms later for its first `fastAttempts` retries, then every
 * `slow` ms for as long as it keeps failing.
 *
 * Why a ladder that never ends: the common failure is a moment of lateness (a lease not yet landed),
 * which a retry a second later fixes; a key that is still failing after that is usually waiting on
 * something nobody announces, so giving up would leave it wrong until some distant full pass. It
 * only slows, so a key that stays broken costs one attempt per `slow`. Why one pending retry per
 * key: a burst of failures on one key (several events answered by one failed read) must not become a
 * burst of retries, each answered by another failure, multiplying for ever.
 *
 * ```
 * fast = 1 ms, fastAttempts = 2, slow = 3 ms; f = failure of key k, s = its success
 * source: f-f-f-f---s--f|
 * result: -k-k---k------|
 * ```
 * (attempts at 1 and 3 are fast; the third failure waits slow; the success at 10 cancels nothing,
 * since nothing is pending, but resets the count, so the failure at 13 is fast again; completion
 * cancels the retry it scheduled)
 *
 * Semantics:
 * - A failure with no retry pending for its key schedules one: after `fast` ms while fewer than
 *   `fastAttempts` retries were scheduled since the key's last success, after `slow` ms otherwise.
 * - A failure while a retry is pending for its key changes nothing and is not counted.
 * - A success cancels the key's pending retry, if any, and forgets the key.
 * - Every key is independent. A key that failed and whose retry was emitted stays known (a count)
 *   until its next report; a retry that nobody answers is never repeated.
 * - Source completion completes at once and cancels every pending retry: nothing could answer them.
 * - Source error errors at once, cancelling every pending retry.
 * - Unsubscribing unsubscribes the source and cancels every pending retry.
 * - An `onPendingChange` that throws errors the output (as rxjs's operators do when a callback
 *   throws), also when it is a retry's timer that calls it; at teardown, when there is no output
 *   left to error, its throw comes out of `unsubscribe` as an `UnsubscriptionError`, as rxjs does
 *   with a throwing finalizer.
 *
 * @example Re-read a key whose read failed
 * ```ts
 * const reports = new Subject<RepairReport<string>>();
 * reports.pipe(retryLadder()).subscribe((key) => readAgain(key)); // readAgain reports to `reports`
 * ```
 *
 * @param config `fast`, `fastAttempts`, `slow`, `onPendingChange`, `scheduler`.
 * @return A function that returns an Observable of the keys to try again, each when it is due.
 */
export function retryLadder<K>(config: RetryLadderConfig = {}): OperatorFunction<RepairReport<K>, K> {
  const { fast = 1000, fastAttempts = 3, slow = 5000, onPendingChange, scheduler = asyncScheduler } = config;
  return (source) =>
    new Observable<K>((subscriber) => {
      const ladders = new Map<K, Ladder>();
      let pending = 0;
      const count = (delta: number): void => {
        pending += delta;
        onPendingChange?.(pending);
      };

      const fail = (key: K): void => {
        const known = ladders.get(key);
        const ladder: Ladder = known ?? { scheduled: 0, pending: undefined };
        if (known === undefined) ladders.set(key, ladder);
        if (ladder.pending !== undefined) return;
        const delay = ladder.scheduled < fastAttempts ? fast : slow;
        ladder.scheduled++;
        const retry = scheduler.schedule(() => {
          retry.unsubscribe();
          ladder.pending = undefined;
          // A timer is no subscriber's handler: a throwing gauge callback is routed here by hand.
          try {
            count(-1);
          } catch (error) {
            subscriber.error(error);
            return;
          }
          subscriber.next(key);
        }, delay);
        // Kept in the ladder, not added to the subscriber (teardown below cancels it): RxJS removes
        // a finished child with indexOf + splice, quadratic with thousands of keys pending.
        ladder.pending = retry;
        count(+1);
      };

      const succeed = (key: K): void => {
        const ladder = ladders.get(key);
        if (ladder === undefined) return;
        ladders.delete(key);
        if (ladder.pending !== undefined) {
          ladder.pending.unsubscribe();
          count(-1);
        }
      };

      subscribeWith(subscriber, subscriber, source, {
        next: (report) => {
          if (report.ok) succeed(report.key);
          else fail(report.key);
        },
      });

      // Cancels every pending retry, and reports the count back to zero.
      return () => {
        for (const ladder of ladders.values()) ladder.pending?.unsubscribe();
        ladders.clear();
        if (pending !== 0) {
          pending = 0;
          onPendingChange?.(0);
        }
      };
    });
}
