import { Observable, ObservableInput, OperatorFunction, Subscriber, take, from } from 'rxjs';
import { OperatorSubscriber, subscribeInner, subscribeWith } from './internal/OperatorSubscriber';
import { OrderedLine, Place } from './OrderedLine';
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
 * - A settle observable that errors, or a `settle` call that throws (or returns something that is
 *   not an `ObservableInput`), errors the output at once; the source and every other settle
 *   observable are unsubscribed, and what the line holds is lost.
 * - After every settlement the contiguous settled head of the line is emitted, in arrival order.
 * - When the source completes, the output completes once every place has settled and left: at
 *   once if the line is empty.
 * - When the source errors, the output errors at once; pending settle observables are
 *   unsubscribed, and what the line holds is lost.
 * - When `config.drain` emits, see {@link ReleaseInOrderConfig.drain}.
 * - Unsubscribing from the output unsubscribes the source, every pending settle observable and
 *   the drain notifier.
 * - A consumer that reacts to an emission by feeding the source synchronously cannot get later
 *   values ahead of earlier ones: emissions are queued and handed on by the outermost call, so a
 *   synchronous feedback loop runs flat, not a stack frame deeper per value.
 * - Synchronous settle work (`of(x)`, an array, a resolved value) settles its place before the
 *   next source value arrives; an array settles with its first element.
 * - Without `drain` the output carries answers only (`R`); with it, unanswered source values may
 *   go out too (`T | R`), and the types say so.
 *
 * ## Example
 * Read each changed instance concurrently, but emit the enriched events in the order the changes
 * arrived, dropping those that say nothing new
 *
 * ```ts
 * import { delay, of } from 'rxjs';
 * import { releaseInOrder, TRASH } from '@rxfleet/operators';
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
 * @return A function that returns an Observable of the answers in arrival order (with `drain`,
 * also the source values still unanswered when it fired).
 */
export function releaseInOrder<T, R = T>(
  settle: (value: T, index: number) => ObservableInput<R | typeof TRASH>,
  config?: ReleaseInOrderConfig & { drain?: undefined },
): OperatorFunction<T, R>;
export function releaseInOrder<T, R = T>(
  settle: (value: T, index: number) => ObservableInput<R | typeof TRASH>,
  config: ReleaseInOrderConfig,
): OperatorFunction<T, T | R>;
export function releaseInOrder<T, R = T>(
  settle: (value: T, index: number) => ObservableInput<R | typeof TRASH>,
  config: ReleaseInOrderConfig = {},
): OperatorFunction<T, T | R> {
  return (source) =>
    new Observable<T | R>((subscriber) => {
      const ordering = new Ordering<T, R>(subscriber, settle);
      if (config.drain != null) {
        subscribeWith(subscriber, subscriber, from(config.drain).pipe(take(1)), {
          next: () => ordering.drain(),
          // A drain that completes without emitting changes nothing.
          complete: () => undefined,
        });
        if (subscriber.closed) return;
      }
      subscribeWith(subscriber, subscriber, source, {
        next: (value) => ordering.accept(value),
        complete: () => ordering.sourceCompleted(),
      });
      return () => ordering.teardown();
    });
}

/**
 * One subscription's line. A class rather than closures because every value's settle work refers
 * back to it: a value in flight then costs its place and one subscriber ({@link Settling}).
 */
class Ordering<T, R> {
  private readonly line = new OrderedLine<T | R>();
  // Values out of the line but not yet emitted. Emitting can re-enter this object (a consumer
  // feeding the source, whose value settles synchronously). A re-entrant call only queues here and
  // the outermost call emits: otherwise a value released deeper in the stack would be emitted
  // before earlier ones the outer call still holds, and a synchronous feedback loop would grow the
  // stack with every value.
  private readonly outbox = new RingQueue<T | R>();
  // Settle work still running, as an intrusive list: O(1) to add and remove, walked by teardown.
  // (Adding each inner to the subscriber instead made a line 100k deep quadratic: RxJS removes a
  // finished child with indexOf + splice.)
  private first: Settling<T, R> | undefined;
  private emitting = false;
  private index = 0;
  private sourceDone = false;
  private drained = false;

  constructor(
    readonly output: Subscriber<T | R>,
    private readonly settle: (value: T, index: number) => ObservableInput<R | typeof TRASH>,
  ) {}

  accept(value: T): void {
    if (this.drained) return;
    const place = this.line.push(value);
    const input = this.settle(value, this.index++);
    const inner = new Settling<T, R>(this, place);
    inner.after = this.first;
    if (this.first !== undefined) this.first.before = inner;
    this.first = inner;
    subscribeInner(input, inner);
  }

  /** A settle observable's first value, or its completion without one (`TRASH`). */
  answer(inner: Settling<T, R>, answer: R | typeof TRASH): void {
    if (inner.answered) return;
    inner.answered = true;
    this.unlink(inner);
    inner.unsubscribe();
    if (this.drained) return;
    if (answer === TRASH) this.line.trash(inner.place);
    else this.line.settle(inner.place, answer);
    // Only the place at the front can let anything out; most answers land behind it.
    if (this.line.peek() === inner.place) this.handOn(this.line.release());
  }

  sourceCompleted(): void {
    this.sourceDone = true;
    if (!this.drained) this.handOn([]);
  }

  drain(): void {
    // Everything arriving or answering from here on is ignored: the line is spoken for.
    this.drained = true;
    this.handOn(this.line.drain());
  }

  teardown(): void {
    for (let inner = this.first; inner !== undefined; inner = inner.after) {
      inner.answered = true;
      inner.unsubscribe();
    }
    this.first = undefined;
  }

  private handOn(values: readonly (T | R)[]): void {
    if (this.emitting) {
      for (const value of values) this.outbox.push(value);
      return;
    }
    this.emitting = true;
    const output = this.output;
    try {
      for (let i = 0; i < values.length && !output.closed; i++) output.next(values[i]);
      while (this.outbox.length > 0 && !output.closed) output.next(this.outbox.shift() as T | R);
    } finally {
      this.emitting = false;
    }
    if (this.drained || (this.sourceDone && this.line.length === 0)) output.complete();
  }

  private unlink(inner: Settling<T, R>): void {
    if (inner.before === undefined) this.first = inner.after;
    else inner.before.after = inner.after;
    if (inner.after !== undefined) inner.after.before = inner.before;
    inner.before = inner.after = undefined;
  }
}

/** One value's settle work: the subscriber to it, holding the value's place in the line. */
class Settling<T, R> extends OperatorSubscriber<R | typeof TRASH> {
  before: Settling<T, R> | undefined = undefined;
  after: Settling<T, R> | undefined = undefined;
  answered = false;

  constructor(
    private readonly ordering: Ordering<T, R>,
    readonly place: Place<T | R>,
  ) {
    super(ordering.output);
  }

  protected onNext(answer: R | typeof TRASH): void {
    this.ordering.answer(this, answer);
  }

  // Completing with nothing to say is an answer too: without it the place would never settle and
  // would hold back the rest of the line for ever.
  protected override onComplete(): void {
    this.ordering.answer(this, TRASH);
  }
}
