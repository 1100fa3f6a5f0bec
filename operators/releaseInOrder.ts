import { Observable, ObservableInput, OperatorFunction, Subscriber, UnsubscriptionError, from, take } from 'rxjs';
import { LinePlace, PlaceState, TRASH, Trash, settlePlace } from './internal/Line.js';
import { LineOutput } from './internal/LineOutput.js';
import { OperatorSubscriber, subscribeInner, subscribeWith } from './internal/OperatorSubscriber.js';

/**
 * Options for {@link releaseInOrder}.
 *
 * @group Options
 */
export interface ReleaseInOrderConfig {
  /**
   * When this emits (its first value; completing without one does nothing), everything still in
   * the line is handed on in arrival order (values whose answer has not come go out as they
   * arrived, trashed ones are skipped), all pending settle work and the source are unsubscribed,
   * and the output completes. An error from it errors the output.
   *
   * For shutting down without losing what was admitted: what was not answered in time is better
   * handed on unanswered than dropped. Subscribed before the source, so a drain that has already
   * fired stops the operator before it subscribes to anything.
   */
  drain?: ObservableInput<unknown>;
}

/**
 * A value that settles itself, for {@link releaseInOrder} without a `settle` function: its owner
 * answers it through a callback, whenever the answer comes.
 *
 * @group What the operators take and give
 */
export interface Settling<R> {
  /**
   * Called once, when the value takes its place in the line: call `settled` once, now or later,
   * with what to release in its place, or `TRASH` to skip it. Later calls change nothing.
   */
  whenSettled(settled: (answer: R | Trash) => void): void;
}

/**
 * What a {@link Settling} value settles with: `SettledAnswer<LineEntry>` is the entry's answer type.
 *
 * @group What the operators take and give
 */
export type SettledAnswer<T> = T extends Settling<infer R> ? R : never;

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
 * in a line when it arrives ({@link OrderedLine}'s rule, the same code), and leaves only when its
 * own settle observable has answered and everything ahead of it has left. A value whose answer is "nothing to say" is trashed
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
 *   values ahead of earlier ones: one loop hands the line's head on, looking at the front again
 *   after every emission, so a synchronous feedback loop runs flat, not a stack frame deeper per
 *   value.
 * - Cost: a value in flight is one object (its place and the subscriber to its settle work are the
 *   same object) plus whatever its settle observable is; nothing is allocated per emission.
 * - Synchronous settle work (`of(x)`, an array, a resolved value) settles its place before the
 *   next source value arrives; an array settles with its first element.
 * - Without `drain` the output carries answers only (`R`); with it, unanswered source values may
 *   go out too (`T | R`), and the types say so.
 *
 * Without `settle`, each value settles itself ({@link Settling}): its `whenSettled` is called as it
 * takes its place, and the first answer it passes to the callback settles the place (`TRASH`
 * trashes it). The same line, the same rules, and no subscription per value, for an owner that
 * starts each value's work itself and has the answer in hand when it comes (a read it shares with
 * other values, an answer it already holds): wrapping that answer in an Observable per value only
 * for the line to subscribe to it costs more (the README's benchmarks measure both). Exactly:
 * - A later call of the callback is ignored, and so is one after the output has completed,
 *   errored or been unsubscribed, or after a drain.
 * - `whenSettled` throwing errors the output (as rxjs's operators do when a callback throws).
 * - The output's type is the values' answer type ({@link SettledAnswer}), so
 *   `entries$.pipe(releaseInOrder())` infers it from the entries.
 *
 * ```
 * a, b, c settle themselves with A at 5, B at 3, TRASH at 6
 * source: -a-b-c-------|
 * result: -----(AB)----|
 * ```
 *
 * @example Read each changed instance concurrently, but emit the enriched events in the order the changes arrived, dropping those that say nothing new
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
 * it. Left out, the values settle themselves ({@link Settling}).
 * @param config Optional; see {@link ReleaseInOrderConfig}.
 * @return A function that returns an Observable of the answers in arrival order (with `drain`,
 * also the source values still unanswered when it fired).
 *
 * @group Operators
 */
export function releaseInOrder<T, R = T>(
  settle: (value: T, index: number) => ObservableInput<R | Trash>,
  config?: ReleaseInOrderConfig & { drain?: undefined },
): OperatorFunction<T, R>;
export function releaseInOrder<T, R = T>(
  settle: (value: T, index: number) => ObservableInput<R | Trash>,
  config: ReleaseInOrderConfig,
): OperatorFunction<T, T | R>;
export function releaseInOrder<T extends Settling<unknown>>(
  config?: ReleaseInOrderConfig & { drain?: undefined },
): OperatorFunction<T, SettledAnswer<T>>;
export function releaseInOrder<T extends Settling<unknown>>(config: ReleaseInOrderConfig): OperatorFunction<T, T | SettledAnswer<T>>;
export function releaseInOrder<T, R>(
  settleOrConfig?: ((value: T, index: number) => ObservableInput<R | Trash>) | ReleaseInOrderConfig,
  settleConfig?: ReleaseInOrderConfig,
): OperatorFunction<T, T | R> {
  if (typeof settleOrConfig === 'function') {
    const settle = settleOrConfig;
    return (source) =>
      new Observable<T | R>((subscriber) => {
        const ordering = new InOrder<T, R>(subscriber, settle);
        if (!drainWith(subscriber, ordering.out, settleConfig, () => ordering.drain())) return;
        subscribeWith(subscriber, source, {
          next: (value) => ordering.accept(value),
          complete: () => ordering.out.sourceCompleted(),
        });
        return () => ordering.teardown();
      });
  }
  const config = settleOrConfig;
  return (source) =>
    new Observable<T | R>((subscriber) => {
      const out = new LineOutput<T | R, Told<T | R>>(subscriber);
      if (!drainWith(subscriber, out, config, () => out.drain())) return;
      subscribeWith(subscriber, source as Observable<T & Settling<R>>, {
        next: (value) => {
          if (out.drained) return;
          const place = new Told<T | R>(value);
          out.line.push(place);
          value.whenSettled((answer) => {
            // The first answer wins; one after a drain, a teardown or an error changes nothing.
            if (place.state !== 'pending' || out.drained || subscriber.closed) return;
            settlePlace(place, answer);
            out.settled(place);
          });
        },
        complete: () => out.sourceCompleted(),
      });
      // Nothing to stop per value: the owner answers through a callback that checks the place.
      return () => out.line.clear();
    });
}

/** Subscribes `config.drain`, if any; whether the operator goes on (a drain that fired at once stopped it). */
function drainWith(
  subscriber: Subscriber<unknown>,
  out: { drained: boolean },
  config: ReleaseInOrderConfig | undefined,
  drain: () => void,
): boolean {
  if (config?.drain == null) return true;
  subscribeWith(subscriber, from(config.drain).pipe(take(1)), {
    next: drain,
    // A drain that completes without emitting changes nothing.
    complete: () => undefined,
  });
  return !subscriber.closed && !out.drained;
}

/**
 * One subscription of {@link releaseInOrder}: the line's output loop, and the settle work of every
 * value still in its line.
 */
class InOrder<T, R> {
  readonly out: LineOutput<T | R, Answering<T, R>>;
  private index = 0;

  constructor(
    readonly output: Subscriber<T | R>,
    private readonly settle: (value: T, index: number) => ObservableInput<R | Trash>,
  ) {
    this.out = new LineOutput(output);
  }

  accept(value: T): void {
    if (this.out.drained) return;
    // In the line before `settle` runs, so that work answering at once finds its place.
    const place = new Answering<T, R>(this, value);
    this.out.line.push(place);
    subscribeInner(this.settle(value, this.index++), place);
  }

  /** A settle observable's first value, or its completion without one (`TRASH`). */
  answer(place: Answering<T, R>, answer: R | Trash): void {
    if (place.state !== 'pending') return;
    place.unsubscribe();
    settlePlace(place, answer);
    this.out.settled(place);
  }

  drain(): void {
    this.stopPending();
    this.out.drain();
  }

  teardown(): void {
    try {
      this.stopPending();
    } finally {
      this.out.line.clear();
    }
  }

  // Every value whose work is still running is in the line (a place leaves only once settled), so
  // the line is the list of work to stop: no second list per value.
  private stopPending(): void {
    const { line } = this.out;
    let errors: unknown[] | undefined;
    for (let i = 0; i < line.length; i++) {
      const place = line.at(i) as Answering<T, R>;
      if (place.state !== 'pending') continue;
      try {
        place.unsubscribe();
      } catch (error) {
        (errors ??= []).push(...(error instanceof UnsubscriptionError ? error.errors : [error]));
      }
    }
    if (errors !== undefined) throw new UnsubscriptionError(errors);
  }
}

/**
 * One value's place in the line and the subscriber to its settle work, in one object: the place
 * holds the value until its answer replaces it.
 */
class Answering<T, R> extends OperatorSubscriber<R | Trash> implements LinePlace<T | R> {
  state: PlaceState = 'pending';
  value: T | R | undefined;

  constructor(
    private readonly owner: InOrder<T, R>,
    value: T,
  ) {
    super(owner.output);
    this.value = value;
  }

  protected onNext(answer: R | Trash): void {
    this.owner.answer(this, answer);
  }

  // Completing with nothing to say is an answer too: without it the place would never settle and
  // would hold back the rest of the line for ever.
  protected override onComplete(): void {
    this.owner.answer(this, TRASH);
  }
}

/** A self-settling value's place in the line: the value until its answer replaces it. */
class Told<V> implements LinePlace<V> {
  state: PlaceState = 'pending';

  constructor(public value: V | undefined) {}
}
