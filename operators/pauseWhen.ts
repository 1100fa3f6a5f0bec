import { MonoTypeOperatorFunction, Observable, ObservableInput } from 'rxjs';
import { checkOptionalFunction } from './internal/checks.js';
import { subscribeWith } from './internal/OperatorSubscriber.js';

/**
 * Options for {@link pauseWhen}.
 *
 * @group Options
 */
export interface PauseWhenConfig<T> {
  /** The state before `paused` first emits. Default `false` (open). */
  initiallyPaused?: boolean;
  /** Told about every value dropped while paused. */
  onDrop?: (value: T) => void;
}

/**
 * Drops values while the last value of `paused` is `true`, and passes them while it is `false`.
 *
 * Nothing is buffered on purpose: a standby instance must not wake up holding a backlog of
 * sightings that another instance has already acted on. What matters is seen again (the next
 * discovery round), so a dropped value is reported, never kept. Compare rxjs-etc's `pause`,
 * which keeps every held value alive.
 *
 * ```
 * paused: f---t-----f--
 * source: -a-b-c-d-e-f-
 * result: -a-b-------f-     (c, d, e reported to onDrop)
 * ```
 *
 * Semantics:
 * - `paused` is subscribed before the source, so a `BehaviorSubject` (or a {@link PauseGate}'s
 *   `paused$`) decides the very first value.
 * - `paused` completing leaves the last state in force; `paused` erroring errors the output.
 * - Completes and errors with the source; unsubscribing unsubscribes both.
 * - An `onDrop` that throws errors the output (as rxjs's operators do when a callback throws).
 *
 * - Bad options are refused when the operator is made: an `initiallyPaused` that is not a
 *   boolean, or an `onDrop` that is not a function, is a `TypeError`.
 *
 * In-flight work that must stop at its next attempt boundary reads the same state: see
 * {@link PauseGate.signal}.
 *
 * @example A standby drops sightings until the election makes it leader, counting what it dropped
 * ```ts
 * const gate = new PauseGate(true); // paused until elected
 * sightings$.pipe(pauseWhen(gate.paused$, { onDrop: () => droppedWhilePaused.inc() })).subscribe(provision);
 * elected$.subscribe((leader) => (leader ? gate.resume() : gate.pause()));
 * ```
 *
 * @param paused the pause state; `true` drops.
 * @param config `initiallyPaused` and `onDrop`.
 * @return A function that returns an Observable of the values that arrived while open.
 * @throws TypeError (when called) for a bad option, as above.
 *
 * @group Operators
 */
export function pauseWhen<T>(paused: ObservableInput<boolean>, config: PauseWhenConfig<T> = {}): MonoTypeOperatorFunction<T> {
  const { initiallyPaused = false, onDrop } = config;
  if (typeof initiallyPaused !== 'boolean')
    throw new TypeError(`pauseWhen: initiallyPaused must be a boolean, got ${String(initiallyPaused)}`);
  checkOptionalFunction('pauseWhen', 'onDrop', onDrop);
  return (source) =>
    new Observable<T>((subscriber) => {
      let isPaused = initiallyPaused;
      subscribeWith(subscriber, paused, {
        next: (state) => {
          isPaused = state;
        },
        // The last state stays in force.
        complete: () => undefined,
      });
      if (subscriber.closed) return;
      subscribeWith(subscriber, source, {
        next: (value) => {
          if (isPaused) onDrop?.(value);
          else subscriber.next(value);
        },
      });
    });
}
