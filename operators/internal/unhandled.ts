import { asyncScheduler, config } from 'rxjs';

/**
 * Where a core sends a callback's throw that has no caller to go to and no `onError` to take it
 * (a read answering, a retry falling due): rxjs's own path for an error with nowhere to go, so it
 * is never lost. `config.onUnhandledError` when set, else thrown on a later turn, where the host
 * reports it (an uncaught exception in Node), as rxjs's `reportUnhandledError` does.
 *
 * Not rethrown where it happened: the core's caller may then be a read's producer, and rxjs
 * swallows what a producer throws once its subscriber is closed.
 */
export function reportUnhandled(error: unknown): void {
  const hook = config.onUnhandledError;
  if (hook != null) {
    hook(error);
    return;
  }
  asyncScheduler.schedule(() => {
    throw error;
  });
}
