import { Observable } from 'rxjs';
import { UnsubscribedError } from './errors.js';

/** Options for {@link fromAbortable}. */
export interface FromAbortableOptions {
  /** Another signal that aborts the work (for example a {@link PauseGate}'s), with its own reason. */
  signal?: AbortSignal;
}

/**
 * Turns work written against an `AbortSignal` into an Observable factory, so it can be handed to
 * any operator of the kit that takes work as an Observable.
 *
 * ```
 * fromAbortable(signal => fetch(url, { signal }).then(r => r.json()))
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
 *
 * @param work Starts the work; called with a signal that aborts when the work is no longer wanted.
 * @param options `signal`: another signal that aborts the work.
 * @return An Observable of the one value the work resolves to.
 */
export function fromAbortable<T>(work: (signal: AbortSignal) => PromiseLike<T>, options: FromAbortableOptions = {}): Observable<T> {
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
