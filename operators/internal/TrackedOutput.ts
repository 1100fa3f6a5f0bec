import { UnsubscriptionError } from 'rxjs';
import type { Output } from './OperatorSubscriber.js';
import { reportUnhandled } from './unhandled.js';

/**
 * An operator's output in front of its subscriber (or any {@link Output}), remembering whether the output ended by a
 * notification of its own (it completed or errored) rather than by the consumer unsubscribing:
 * what a teardown that calls the user's code (a gauge told 0, a ticket freed) needs to know to
 * send a throw where someone can take it.
 *
 * Why it matters: when the output errors or completes, the teardown runs inside that notification,
 * whose caller is a producer (a source emitting, a timer firing, or `subscribe()` itself when the
 * source is synchronous). A throw from the teardown would come out there: out of `subscribe()` as a
 * plain error, or out of a timer as an uncaught exception. Only a consumer that unsubscribes is
 * there to take it, as rxjs's own throwing finalizers do.
 */
export class TrackedOutput implements Output {
  /** The output completed or errored (as opposed to being unsubscribed, or still open). */
  ended = false;

  constructor(private readonly output: Output) {}

  error(error: unknown): void {
    this.ended = true;
    this.output.error(error);
  }

  complete(): void {
    this.ended = true;
    this.output.complete();
  }

  /**
   * Where the throws of a teardown's calls to the user's code go: out of `unsubscribe` as an
   * `UnsubscriptionError` when the consumer unsubscribed; once the output has ended by itself,
   * there is nobody to tell but rxjs's path for an error with nowhere to go
   * (`config.onUnhandledError`, or thrown on a later turn).
   */
  tearDown(errors: readonly unknown[]): void {
    if (errors.length === 0) return;
    if (!this.ended) throw new UnsubscriptionError([...errors]);
    for (const error of errors) reportUnhandled(error);
  }
}
