import { from, Observable, ObservableInput, OperatorFunction, Subscription, take } from 'rxjs';
import { OrderedLine } from './OrderedLine';
import { RingQueue } from './RingQueue';

/**
 * Emitted by a settle observable to trash its value in place: the value is skipped on the way out,
 * but still holds back everything that arrived after it until everything before it has left.
 */
export const TRASH: unique symbol = Symbol('rxfleet.TRASH');

/** Options for {@link releaseInOrder}. */
export interface ReleaseInOrderConfig {
  /**
   * When this emits (its first value; completing without one does nothing), everything still in
   * the line is handed on in arrival order (values whose settle observable has not answered go out
   * as they arrived, trashed ones are skipped), all pending settle work and the source are
   * unsubscribed, and the output completes. An error from it errors the output.
   *
   * For shutting down without losing what was admitted: what was not answered in time is better
   * handed on unanswered than dropped. Subscribed before the source, so a drain that has already
   * fired stops the operator before it subscribes to anything.
   */
  drain?: ObservableInput<unknown>;
}

/**
 * Settles every source value concurrently and emits the answers in the order the values arrived.
 *
 * <span class="informal">Like `concatMap` in its output order and like `mergeMap` in its
 * concurrency: each value's settle observable runs at once, and the first value it emits is held
 * until everything that arrived before it has been emitted.</span>
 *
 * Work that runs concurrently finishes in whatever order it finishes, and a consumer that sees the
 * answers in that order can be wrong in a way no later step can detect: a create landing after the
 * delete that superseded it is a correctly locked wrong answer. So every source value takes a place
 * in an {@link OrderedLine} when it arrives, and leaves only when its own settle observable has
 * answered and everything ahead of it has left. A value whose answer is "nothing to say" is trashed
 * in place rather than removed, so it still holds back what arrived after it. The cost is
 * head-of-line blocking on delivery alone: a slow answer at the front delays the emission of those
 * behind it, never their work, which is already running.
 *
 * ```
 * source:      -a-b-c-------|
 * settle(a):    -----A|
 * settle(b):      -B|
 * settle(c):        -T|            (T is TRASH)
 * result:      ------(AB)---|
 * ```
 *
 * Exactly:
 * - Each source value takes a place at the back of the line, then `settle(value, index)` is
 *   called and subscribed at once; all of them run concurrently, the line only orders.
 * - The first value a settle observable emits settles the place with that value as its
 *   replacement (`TRASH` trashes it instead), and the settle observable is unsubscribed: later
 *   values are not awaited.
 * - A settle observable that completes without emitting trashes its place.
 * - A settle observable that errors, or a `settle` call that throws, errors the output at once;
 *   the source and every other settle observable are unsubscribed, and what the line holds is
 *   lost.
 * - After every settlement the contiguous settled head of the line is emitted, in arrival order.
 * - When the source completes, the output completes once every place has settled and left: at
 *   once if the line is empty.
 * - When the source errors, the output errors at once; pending settle observables are
 *   unsubscribed, and what the line holds is lost.
 * - When `config.drain` emits, see {@link ReleaseInOrderConfig.drain}.
 * - Unsubscribing from the output unsubscribes the source, every pending settle observable and
 *   the drain notifier.
 * - A consumer that reacts to an emission by feeding the source synchronously cannot get later
 *   values ahead of earlier ones: emissions are queued and handed on by the outermost call.
 *
 * ## Example
 * Read each changed instance concurrently, but emit the enriched events in the order the changes
 * arrived, dropping those that say nothing new
 *
 * ```ts
 * import { delay, of } from 'rxjs';
 * import { releaseInOrder, TRASH } from 'rxfleet';
 *
 * of(30, 10, 0, 20)
 *   .pipe(releaseInOrder((ms) => (ms === 0 ? of(TRASH) : of(`read ${ms}ms`).pipe(delay(ms)))))
 *   .subscribe(console.log);
 * // read 30ms
 * // read 10ms
 * // read 20ms
 * ```
 *
 * @param settle Called with each source value and its 0-based arrival index; returns the work
 * whose first emission settles that value: a replacement to emit in its place, or `TRASH` to skip
 * it.
 * @param config Optional; see {@link ReleaseInOrderConfig}.
 * @return A function that returns an Observable of the answers (or, on drain, the unanswered
 * source values) in arrival order.
 */
export function releaseInOrder<T, R = T>(
  settle: (value: T, index: number) => ObservableInput<R | typeof TRASH>,
  config: ReleaseInOrderConfig = {},
): OperatorFunction<T, T | R> {
  return (source) =>
    new Observable<T | R>((subscriber) => {
      const line = new OrderedLine<T | R>();
      // Values out of the line but not yet emitted. Emitting can re-enter this closure (a consumer
      // feeding the source, whose value settles synchronously). A re-entrant call only queues here
      // and the outermost call emits: otherwise a value released deeper in the stack would be
      // emitted before earlier ones the outer call still holds, and a synchronous feedback loop
      // would grow the stack with every value.
      const outbox = new RingQueue<T | R>();
      let emitting = false;
      let index = 0;
      let sourceDone = false;
      let drained = false;
      const pending = new Set<Subscription>();
      subscriber.add(() => {
        for (const inner of pending) inner.unsubscribe();
        pending.clear();
      });

      const handOn = (values: readonly (T | R)[]): void => {
        for (const value of values) outbox.push(value);
        if (emitting) return;
        emitting = true;
        try {
          while (outbox.length > 0 && !subscriber.closed) subscriber.next(outbox.shift() as T | R);
        } finally {
          emitting = false;
        }
        if (drained || (sourceDone && line.length === 0)) subscriber.complete();
      };

      if (config.drain != null) {
        subscriber.add(
          from(config.drain)
            .pipe(take(1))
            .subscribe({
              next: () => {
                // Everything arriving or answering from here on is ignored: the line is spoken for.
                drained = true;
                handOn(line.drain());
              },
              error: (error: unknown) => subscriber.error(error),
            }),
        );
      }
      if (subscriber.closed) return;

      subscriber.add(
        source.subscribe({
          next: (value) => {
            if (drained) return;
            const place = line.push(value);
            let work: ObservableInput<R | typeof TRASH>;
            try {
              work = settle(value, index++);
            } catch (error) {
              subscriber.error(error);
              return;
            }
            let answered = false;
            // The inner is kept in a Set, not added to the subscriber: RxJS removes a finished child
            // from its parent with indexOf + splice, which made a line 100k deep quadratic.
            const inner = new Subscription();
            pending.add(inner);
            const finish = (): void => {
              pending.delete(inner);
              inner.unsubscribe();
            };
            inner.add(
              from(work).subscribe({
                next: (answer) => {
                  if (answered || drained) return;
                  answered = true;
                  finish();
                  if (answer === TRASH) line.trash(place);
                  else line.settle(place, answer);
                  handOn(line.release());
                },
                error: (error: unknown) => subscriber.error(error),
                complete: () => {
                  finish();
                  // Completing with nothing to say is an answer too: without it the place would
                  // never settle and would hold back the rest of the line for ever.
                  if (answered || drained) return;
                  line.trash(place);
                  handOn(line.release());
                },
              }),
            );
          },
          error: (error: unknown) => subscriber.error(error),
          complete: () => {
            sourceDone = true;
            if (!drained) handOn([]);
          },
        }),
      );
    });
}
