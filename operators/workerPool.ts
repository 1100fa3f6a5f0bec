import { ObservableInput, Observable, OperatorFunction, SchedulerLike } from 'rxjs';
import { Pool } from './internal/Pool.js';
import { subscribeWith } from './internal/OperatorSubscriber.js';
import { checkCount, checkFunction, checkOptionalFunction } from './internal/checks.js';
import type { Outcome, PoolResult, PoolTicket } from './outcomes.js';

/**
 * Options for {@link workerPool}.
 *
 * @group Options
 */
export interface WorkerPoolConfig<T, R> {
  /** Most units of work running at once: a whole number, at least 1 (`Infinity`: no bound, as `mergeMap`'s). */
  concurrency: number;
  /**
   * The work for one ticket, as an Observable factory: its first value is the outcome, and it is
   * unsubscribed then. An error becomes a `failed` outcome, and so does a factory that throws;
   * completing without an outcome is a failure too ({@link NoOutcomeError}).
   */
  work: (ticket: T) => ObservableInput<Outcome<R>>;
  /**
   * Told the number of busy workers after every change (for a gauge), and 0 at teardown if any
   * was busy. Once it has thrown it is not called again.
   */
  onBusy?: (busy: number) => void;
  /** Times the keys held after their work (`freeAfter`: one timer per distinct delay). Defaults to `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/**
 * Runs the work of each ticket with at most `concurrency` units at once, skips tickets that went
 * stale while they waited, and frees each ticket's key according to how its work ended.
 *
 * Tickets come from an {@link AdmissionLedger} through {@link admit}, or, for plain values that
 * need no admission, from {@link valueTicket} (`map(valueTicket)` before the pool).
 *
 * A bounded `mergeMap` in spirit, with three differences that matter to a fleet: tickets waiting
 * for a worker sit in a ring rather than `mergeMap`'s shifting array (a million waiting tickets
 * cost nothing per dequeue); a ticket is asked whether it is still current when a worker reaches
 * it, not when it arrived, so a reset empties the queue without touching it; and the outcome
 * decides when the key is free again: at once after a failure, or after a delay while a node
 * restarts, so the next discovery round does not catch it halfway.
 *
 * ```
 * concurrency = 1, work(x) = cold('--d|'), work(y) = cold('-f|') where f = failed
 * source: xy---------|
 * result: --XY-------|     X = { x, done }, Y = { y, failed }
 * ```
 * (y waits for the one worker; x's work ends at 2, y's starts then and fails a frame later)
 *
 * Semantics:
 * - First come, first served: tickets start in the order they arrived, also when one arrives from
 *   inside an emission of this pool (a feedback loop): a newcomer joins the back of the queue and
 *   never takes the worker just freed ahead of tickets already waiting. A synchronous feedback
 *   loop (work that answers at once, each result feeding the next ticket) runs flat, not a stack
 *   frame deeper per ticket.
 * - Work that answers synchronously (`of(done(x))`, `[done(x)]`) ends before the next ticket is
 *   looked at; of an array or any input with several values, the first is the outcome.
 * - Results are emitted as work ends, in completion order; a stale ticket (`start()` returns
 *   `false`) emits `skipped` when a worker reaches it, without running its work, and is not
 *   freed.
 * - `done` with `freeAfter` tells the ticket `hold()`, then frees it that many milliseconds
 *   later on `scheduler`; any other outcome frees it as the result is emitted. Every ticket
 *   the pool started or still holds is freed exactly once. A `freeAfter` that is not from 0 to
 *   2147483647 ms (an outcome built without {@link workDone}) makes that result `failed` with a
 *   `RangeError`, its key freed at once.
 * - Keys held after their work share one timer per distinct `freeAfter`, not one each: tickets
 *   held for the same delay fall due in the order they were held, so they wait in a ring per delay behind
 *   one timer for its head (a thousand nodes a second held for a minute are one timer, not sixty
 *   thousand). A ring is dropped once empty.
 * - A unit of work's error, and a `work` factory that throws, are a `failed` outcome, never an
 *   error of the pool: the work failing is what the outcome is for.
 * - A callback that throws (`onBusy`, or a ticket's `start`, `hold` or `free`) errors the
 *   output, as a throwing `project` errors `mergeMap`'s. An `onBusy` that threw is not called
 *   again, not even at teardown.
 * - Completes when the source has completed, nothing waits and nothing runs; keys still held
 *   after their work do not hold completion back: they are freed as it completes (a `free` that
 *   throws then errors the output instead).
 * - A source error errors the output at once.
 * - Teardown (unsubscribe, completion or error) unsubscribes the source and running work, cancels
 *   the timers of held keys and frees every ticket the pool still holds: running, waiting, or waiting
 *   out its `freeAfter`; `onBusy` is told 0 if any worker was busy. No timer or inner
 *   subscription survives it. A `free` or `onBusy` that throws then does not stop the
 *   others; when you unsubscribed, the errors are thrown from `unsubscribe` as an
 *   `UnsubscriptionError`, as rxjs does with a throwing finalizer; after the output has errored,
 *   nobody is left to tell, and they go to rxjs's unhandled-error path
 *   (`config.onUnhandledError`). Nothing is ever thrown out of `subscribe()`.
 * - Bad options are refused when the operator is made: `concurrency` not a whole number of at
 *   least 1 (nor `Infinity`) is a `RangeError`, `work` or `onBusy` not a function a `TypeError`.
 *
 * @example Provision each admitted node with 16 workers, keeping its key a minute after success
 * ```ts
 * tickets$.pipe(
 *   workerPool({
 *     concurrency: 16,
 *     work: (ticket) => fromAbortable((signal) => provision(ticket.value, signal)).pipe(
 *       map((restarted) => workDone(restarted, { freeAfter: restarted ? 60_000 : 0 })),
 *     ),
 *     onBusy: (n) => busyWorkers.set(n),
 *   }),
 * );
 * ```
 *
 * @example Plain values, no admission: four downloads at a time
 * ```ts
 * urls$.pipe(
 *   map(valueTicket),
 *   workerPool({ concurrency: 4, work: (ticket) => fromAbortable((signal) => download(ticket.value, signal).then(workDone)) }),
 * );
 * ```
 *
 * @param config `concurrency`, `work`, `onBusy`, `scheduler`.
 * @return A function that returns an Observable of one {@link PoolResult} per ticket.
 * @throws RangeError (when called) if `concurrency` is not a whole number of at least 1 (nor
 * `Infinity`); TypeError if `work` or `onBusy` is not a function.
 *
 * @group Operators
 */
export function workerPool<T extends PoolTicket, R>(config: WorkerPoolConfig<T, R>): OperatorFunction<T, PoolResult<T, R>> {
  checkCount('workerPool', 'concurrency', config.concurrency, 1);
  checkFunction('workerPool', 'work', config.work);
  checkOptionalFunction('workerPool', 'onBusy', config.onBusy);
  return (source) =>
    new Observable<PoolResult<T, R>>((subscriber) => {
      const pool = new Pool<T, R>(subscriber, config);
      // Through the pool's own end, so that the pool knows whether the output ended by itself.
      subscribeWith(
        pool.ends,
        source,
        {
          next: (ticket) => pool.accept(ticket),
          complete: () => pool.sourceCompleted(),
        },
        subscriber,
      );
      return () => pool.teardown();
    });
}
