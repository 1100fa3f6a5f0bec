/**
 * The errors the kit raises itself. A callback of yours that throws is passed on untouched, as
 * rxjs passes on a throwing `project`; these are for what only the kit can tell.
 *
 * One class per failure, each with a stable `name`, and `cause` (the standard `ErrorOptions`) when
 * another error is behind it, so a caller can branch with `instanceof` and log the chain.
 */

/** Base of every error the kit raises. */
export class OperatorKitError extends Error {
  override readonly name: string = 'OperatorKitError';

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * A unit of work given to {@link workerPool} completed without emitting its outcome: the pool's
 * form of rxjs's `EmptyError`. It is the `error` of that ticket's `failed` outcome.
 */
export class NoOutcomeError extends OperatorKitError {
  override readonly name: string = 'NoOutcomeError';

  constructor(options?: ErrorOptions) {
    super('work completed without an outcome', options);
  }
}

/**
 * A read given to {@link readPerKey} completed without emitting its answer: the keyed read's form
 * of rxjs's `EmptyError`. It is the `error` of that read's `failed` result.
 */
export class NoAnswerError extends OperatorKitError {
  override readonly name: string = 'NoAnswerError';

  constructor(options?: ErrorOptions) {
    super('read completed without an answer', options);
  }
}

/**
 * The reason {@link fromAbortable} aborts its signal with when the Observable is unsubscribed
 * before the work settled: nobody wants the answer any more.
 */
export class UnsubscribedError extends OperatorKitError {
  override readonly name: string = 'UnsubscribedError';

  constructor(options?: ErrorOptions) {
    super('unsubscribed', options);
  }
}

/**
 * The reason carried by a {@link PauseGate.signal} that aborted because the gate paused. Extend it
 * for a domain-specific pause error (its `name` can be overridden).
 */
export class PausedError extends OperatorKitError {
  override readonly name: string = 'PausedError';

  constructor(message = 'paused', options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * A line longer than the limit reached {@link splitLines}: the stream is not read further. Its
 * `maxBytes` is the limit it broke.
 */
export class LineTooLongError extends OperatorKitError {
  override readonly name: string = 'LineTooLongError';

  constructor(
    readonly maxBytes: number,
    options?: ErrorOptions,
  ) {
    super(`a line longer than ${maxBytes} bytes`, options);
  }
}
