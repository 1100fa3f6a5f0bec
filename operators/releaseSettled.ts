import { Observable, OperatorFunction, from, take } from 'rxjs';
import type { LinePlace, PlaceState } from './internal/Line';
import { subscribeWith } from './internal/OperatorSubscriber';
import { Release } from './internal/Release';
import { ReleaseInOrderConfig, TRASH } from './releaseInOrder';

/**
 * A value its producer answers later, and says so through a callback: what {@link releaseSettled}
 * releases.
 */
export interface Settling<R> {
  /**
   * Called once, when the value takes its place in the line: call `settled` once, now or later,
   * with what to release in its place, or `TRASH` to skip it. Later calls change nothing.
   */
  whenSettled(settled: (answer: R | typeof TRASH) => void): void;
}

/**
 * Emits, in the order values arrived, what each one is settled with, though they settle in any
 * order: {@link releaseInOrder}'s rule for values whose producer answers them through a callback.
 *
 * <span class="informal">`releaseInOrder` asks each value for an Observable of its answer and
 * subscribes to it; here the value carries its own settlement, so a value in flight costs its
 * place and the callback, no subscription.</span>
 *
 * Why both: an owner that starts the work for a value itself (a read it may share with other
 * values, or an answer it already holds) has the answer in hand when it comes; wrapping it in an
 * Observable per value only for the line to subscribe to it costs a little more (the README's
 * benchmarks measure both on the same line). The two share the kit's one
 * line rule and one release loop: a value leaves when it has settled and everything ahead of it
 * has left; a value trashed keeps its place until it reaches the front, so nothing overtakes
 * anything.
 *
 * ```
 * a, b, c settle with A at 5, B at 3, TRASH at 6
 * source: -a-b-c-------|
 * result: -----(AB)----|
 * ```
 *
 * Exactly:
 * - Each source value takes a place at the back of the line, then its `whenSettled` is called.
 *   The first call of the callback settles the place with the answer as its replacement (`TRASH`
 *   trashes it); later calls are ignored, and so are calls once the output has completed, errored
 *   or been unsubscribed, or after a drain.
 * - After every settlement the contiguous settled head of the line is emitted, in arrival order.
 * - When the source completes, the output completes once every place has settled and left: at
 *   once if the line is empty.
 * - When the source errors, the output errors at once, and what the line holds is lost.
 * - `whenSettled` throwing errors the output (as rxjs's operators do when a callback throws).
 * - When `config.drain` emits, everything still in the line is handed on in arrival order (values
 *   not settled yet go out as they arrived, trashed ones are skipped), the source is unsubscribed,
 *   later settlements are ignored, and the output completes. Subscribed before the source; its
 *   error errors the output.
 * - Unsubscribing unsubscribes the source and the drain notifier.
 * - A consumer that reacts to an emission by feeding the source synchronously cannot get later
 *   values ahead of earlier ones, and a synchronous feedback loop runs flat: one loop hands the
 *   line's head on, looking at the front again after every emission.
 *
 * @param config Optional `drain`; see {@link ReleaseInOrderConfig}.
 * @return A function that returns an Observable of the answers (or, on drain, the unsettled
 * source values) in arrival order.
 */
export function releaseSettled<T extends Settling<R>, R>(config: ReleaseInOrderConfig = {}): OperatorFunction<T, R | T> {
  return (source) =>
    new Observable<T | R>((subscriber) => {
      const release = new Release<T | R, Told<T | R>>(subscriber);
      if (config.drain != null) {
        subscribeWith(subscriber, subscriber, from(config.drain).pipe(take(1)), {
          next: () => release.drain(),
          // A drain that completes without emitting changes nothing.
          complete: () => undefined,
        });
        if (subscriber.closed) return;
      }
      subscribeWith(subscriber, subscriber, source, {
        next: (value) => {
          if (release.drained) return;
          const place = new Told<T | R>(value);
          release.line.push(place);
          value.whenSettled((answer) => {
            // The first answer wins; one after a drain, a teardown or an error changes nothing.
            if (place.state !== 'pending' || release.drained || subscriber.closed) return;
            if (answer === TRASH) {
              place.state = 'trashed';
              place.value = undefined;
            } else {
              place.state = 'settled';
              place.value = answer;
            }
            release.settled(place);
          });
        },
        complete: () => release.sourceCompleted(),
      });
      // Nothing to stop per value: the producer answers through a callback that checks the place.
      return () => release.line.clear();
    });
}

/** A value's place in the line: the value until its answer replaces it. */
class Told<V> implements LinePlace<V> {
  state: PlaceState = 'pending';

  constructor(public value: V | undefined) {}
}
