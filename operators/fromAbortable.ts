import { Observable } from 'rxjs';
import { UnsubscribedError } from './errors.js';
import { checkFunction } from './internal/checks.js';

/**
 * Options for {@link fromAbortable}.
 *
 * @group Options
 */
export interface FromAbortableOptions {
  /** Another signal that aborts the work (for example a {@link PauseGate}'s), with its own reason. */
  signal?: AbortSignal;
}

/**
 * Turns work written against an `AbortSignal` into an Observable factory, so it can be handed to
 * any operator of the kit that takes work as an Observable.
 *
 * ```
 * work(signal) resolves with v 3 ms after it is called
 * fromAbortable(work):            ---(v|)
 * the same, unsubscribed at 2:    --!        (the signal aborts with UnsubscribedError; v is ignored)
 * ```
 *
 * Guarantees:
 * - `work` is called once per subscription, never at creation.
 * - Unsubscribing before the promise settles aborts the signal (reason {@link UnsubscribedError});
 *   the late settlement is ignored.
 * - A resolved value is emitted once, then the Observable completes; a rejection becomes `error`.
 * - A signal passed in `options.signal` (for example a pause gate's) aborts the work too, with
 *   that signal's reason.
 * - A `work` that throws synchronously errors the Observable, as a rejection does.
 * - A `work` that is not a function, or an `options.signal` that is not an `AbortSignal`, is
 *   refused when the Observable is made, with a `TypeError`.
 *
 * @example A fetch that is aborted when nobody wants its answer any more, or when the gate pauses
 * ```ts
 * const health$ = fromAbortable((signal) => fetch(url, { signal }).then((r) => r.status), { signal: gate.signal() });
 * health$.pipe(timeout(5_000)).subscribe(console.log); // a timeout unsubscribes, which aborts the fetch
 * ```
 *
 * @param work Starts the work; called with a signal that aborts when the work is no longer wanted.
 * @param options `signal`: another signal that aborts the work.
 * @return An Observable of the one value the work resolves to.
 * @throws TypeError (when called) for a bad `work` or `options.signal`, as above.
 *
 * @group Observable factories
 */
export function fromAbortable<T>(work: (signal: AbortSignal) => PromiseLike<T>, options: FromAbortableOptions = {}): Observable<T> {
  checkFunction('fromAbortable', 'work', work);
  const given = options.signal as Partial<AbortSignal> | undefined;
  if (given !== undefined && (typeof given.addEventListener !== 'function' || typeof given.aborted !== 'boolean')) {
    throw new TypeError('fromAbortable: options.signal must be an AbortSignal');
  }
  return new Observable<T>((subscriber) => {
    const controller = new AbortController();
    const outer = options.signal;
    const forward = (): void => controller.abort(outer?.reason);
    if (outer?.aborted) forward();
    else outer?.addEventListener('abort', forward, { once: true });
    let settled = false;
    let pending: PromiseLike<T>;
    try {
      pending = work(controller.signal);
    } catch (error) {
      outer?.removeEventListener('abort', forward);
      subscriber.error(error);
      return;
    }
    Promise.resolve(pending).then(
      (value) => {
        settled = true;
        subscriber.next(value);
        subscriber.complete();
      },
      (error: unknown) => {
        settled = true;
        subscriber.error(error);
      },
    );
    return () => {
      outer?.removeEventListener('abort', forward);
      if (!settled) controller.abort(new UnsubscribedError());
    };
  });
}
