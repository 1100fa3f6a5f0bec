import { Observable, OperatorFunction } from 'rxjs';
import { subscribeWith } from './internal/OperatorSubscriber.js';
import { TrackedOutput } from './internal/TrackedOutput.js';
import { RetryLadderSchedule, RetryLadderScheduleConfig, checkLadder } from './RetryLadderSchedule.js';

/**
 * The outcome of one attempt at a key, as {@link retryLadder} consumes it.
 *
 * @group What the operators take and give
 */
export interface Attempt<K> {
  /** The key attempted. */
  key: K;
  /** Whether the attempt succeeded. */
  ok: boolean;
}

/**
 * Options for {@link retryLadder}: the {@link RetryLadderSchedule}'s, less what the operator does itself
 * (`onDue` is its output, `onError` its error). `onPendingChange` is also told 0 when the
 * subscription ends with retries still pending, unless it has thrown before.
 *
 * @group Options
 */
export type RetryLadderConfig = Omit<RetryLadderScheduleConfig<unknown>, 'onDue' | 'onError'>;

/**
 * Turns reports of attempts on keys into a per-key retry schedule: after a failure the key is
 * emitted ("try it again now") `fast` ms later for its first `fastAttempts` retries, then every
 * `slow` ms for as long as it keeps failing (backing off to `maxSlow`, if given).
 *
 * It is the {@link RetryLadderSchedule} core as an operator, one schedule per subscription, so the rule
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
 *   throws), also when it is a retry's timer that calls it, and is not called again, not even to
 *   report 0 at teardown. Completion reports 0 before completing, so a throw then errors the
 *   output instead. When it throws at teardown: if you unsubscribed, its throw comes out of
 *   `unsubscribe` as an `UnsubscriptionError`, as rxjs does with a throwing finalizer; after the
 *   output has errored, nobody is left to tell, and it goes to rxjs's unhandled-error path
 *   (`config.onUnhandledError`). Nothing is ever thrown out of `subscribe()`.
 * - Bad options are refused when the operator is made, with one error naming the option and the
 *   value: a delay (`fast`, `slow`, `maxSlow`) negative, not a number or longer than a timer can
 *   wait (2147483647 ms), `slow` below 1, or `fastAttempts` not a whole number from 0 (nor
 *   `Infinity`) is a `RangeError`; `onPendingChange` not a function a `TypeError`.
 *
 * @example Re-read a key whose read failed
 * ```ts
 * const reports = new Subject<Attempt<string>>();
 * reports.pipe(retryLadder()).subscribe((key) => readAgain(key)); // readAgain reports to `reports`
 * ```
 *
 * @param config `fast`, `fastAttempts`, `slow`, `maxSlow`, `onPendingChange`, `scheduler`.
 * @return A function that returns an Observable of the keys to try again, each when it is due.
 * @throws RangeError or TypeError (when called) for a bad option, as above.
 *
 * @group Operators
 */
export function retryLadder<K>(config: RetryLadderConfig = {}): OperatorFunction<Attempt<K>, K> {
  checkLadder('retryLadder', config);
  return (source) =>
    new Observable<K>((subscriber) => {
      const out = new TrackedOutput(subscriber);
      // Dropped once it has thrown: the output has errored, and telling a broken gauge 0 at
      // teardown would only throw again, into whoever ended the output.
      let gauge = config.onPendingChange;
      const schedule = new RetryLadderSchedule<K>({
        ...config,
        onPendingChange: (pending) => {
          const told = gauge;
          if (told === undefined) return;
          try {
            told(pending);
          } catch (error) {
            gauge = undefined;
            throw error;
          }
        },
        onDue: (key) => subscriber.next(key),
        onError: (error) => out.error(error),
      });
      subscribeWith(
        out,
        source,
        {
          next: (report) => {
            if (report.ok) schedule.succeed(report.key);
            else schedule.fail(report.key);
          },
          // Nothing could answer a retry now: the gauge goes back to 0 while the output can still
          // take its throw.
          complete: () => {
            schedule.clear();
            out.complete();
          },
        },
        subscriber,
      );
      // Cancels every pending retry, and reports the count back to zero.
      return () => {
        try {
          schedule.clear();
        } catch (error) {
          out.tearDown([error]);
        }
      };
    });
}
