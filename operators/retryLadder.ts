import { Observable, OperatorFunction } from 'rxjs';
import { subscribeWith } from './internal/OperatorSubscriber.js';
import { RetrySchedule, RetryScheduleConfig } from './RetrySchedule.js';

/** The outcome of one attempt at a key, as {@link retryLadder} consumes it. */
export interface Attempt<K> {
  /** The key attempted. */
  key: K;
  /** Whether the attempt succeeded. */
  ok: boolean;
}

/**
 * Options for {@link retryLadder}: the {@link RetrySchedule}'s, less what the operator does itself
 * (`onDue` is its output, `onError` its error). `onPendingChange` is also told 0 when the
 * subscription ends with retries still pending.
 */
export type RetryLadderConfig = Omit<RetryScheduleConfig<unknown>, 'onDue' | 'onError'>;

/**
 * Turns reports of attempts on keys into a per-key retry schedule: after a failure the key is
 * emitted ("try it again now") `fast` ms later for its first `fastAttempts` retries, then every
 * `slow` ms for as long as it keeps failing (backing off to `maxSlow`, if given).
 *
 * It is the {@link RetrySchedule} core as an operator, one schedule per subscription, so the rule
 * lives in one place.
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
 *   `fastAttempts` retries were scheduled since the key's last success, after `slow` ms otherwise
 *   (with `maxSlow`, each slow retry waits twice the one before, up to `maxSlow`).
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
 * const reports = new Subject<Attempt<string>>();
 * reports.pipe(retryLadder()).subscribe((key) => readAgain(key)); // readAgain reports to `reports`
 * ```
 *
 * @param config `fast`, `fastAttempts`, `slow`, `maxSlow`, `onPendingChange`, `scheduler`.
 * @return A function that returns an Observable of the keys to try again, each when it is due.
 */
export function retryLadder<K>(config: RetryLadderConfig = {}): OperatorFunction<Attempt<K>, K> {
  return (source) =>
    new Observable<K>((subscriber) => {
      const schedule = new RetrySchedule<K>({
        ...config,
        onDue: (key) => subscriber.next(key),
        onError: (error) => subscriber.error(error),
      });
      subscribeWith(subscriber, source, {
        next: (report) => {
          if (report.ok) schedule.succeed(report.key);
          else schedule.fail(report.key);
        },
      });
      // Cancels every pending retry, and reports the count back to zero.
      return () => schedule.clear();
    });
}
