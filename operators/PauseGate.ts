import { BehaviorSubject, Observable, distinctUntilChanged } from 'rxjs';
import { PausedError } from './errors.js';

/**
 * A pause flag that a stream, a loop and a pending promise can all read: `paused$` feeds
 * {@link pauseWhen}, `paused` is the synchronous check before an attempt, and `signal()` aborts
 * work in flight the moment the gate closes.
 *
 * Readers check before each attempt *and* inside it: without the inner check an instance that
 * lost an election mid-sequence would carry on configuring a node another instance has taken on.
 *
 * Guarantees:
 * - `paused$` emits the current state on subscription, then every change, never a repeat.
 * - A signal from `signal()` aborts (reason {@link PausedError}) at the next `pause()`; one taken
 *   while paused is already aborted. Resuming never un-aborts a signal: take a fresh one per attempt.
 *
 * @example One gate for the stream, the loop and the request in flight
 * ```ts
 * const gate = new PauseGate(true); // start paused; the election resumes it
 * sightings$.pipe(pauseWhen(gate.paused$)).subscribe(provision);
 *
 * // inside a retry loop: check before each attempt, abort inside it
 * if (gate.paused) throw new PausedError();
 * await fetch(url, { signal: gate.signal() });
 * ```
 *
 * @group Cores
 */
export class PauseGate {
  private readonly state: BehaviorSubject<boolean>;
  private controller: AbortController | undefined;

  /** The current state on subscription, then every change. */
  readonly paused$: Observable<boolean>;

  /** @throws TypeError if `initiallyPaused` is not a boolean. */
  constructor(initiallyPaused = false) {
    if (typeof initiallyPaused !== 'boolean')
      throw new TypeError(`PauseGate: initiallyPaused must be a boolean, got ${String(initiallyPaused)}`);
    this.state = new BehaviorSubject(initiallyPaused);
    this.paused$ = this.state.pipe(distinctUntilChanged());
  }

  /** Whether the gate is closed now. */
  get paused(): boolean {
    return this.state.value;
  }

  /** Closes the gate and aborts every signal handed out since it last opened. */
  pause(): void {
    if (this.state.value) return;
    this.controller?.abort(new PausedError());
    this.controller = undefined;
    this.state.next(true);
  }

  /** Opens the gate. */
  resume(): void {
    if (this.state.value) this.state.next(false);
  }

  /** A signal that aborts at the next pause; already aborted while paused. */
  signal(): AbortSignal {
    if (this.state.value) return AbortSignal.abort(new PausedError());
    // One signal is shared by every attempt in flight; a caller adding hundreds of listeners raises
    // Node's listener limit on it (`events.setMaxListeners`), which the kit, free of I/O, leaves to it.
    this.controller ??= new AbortController();
    return this.controller.signal;
  }
}
