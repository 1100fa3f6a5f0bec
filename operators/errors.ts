/**
 * The errors the kit raises itself. A callback of yours that throws is passed on untouched, as
 * rxjs passes on a throwing `project`; these are for what only the kit can tell.
 *
 * One class per failure, each with a stable `name`, and `cause` (the standard `ErrorOptions`) when
 * another error is behind it, so a caller can branch with `instanceof` and log the chain.
 *
 * `instanceof` holds across copies of the kit: a `PausedError` made by the kit's CommonJS build is
 * an `instanceof PausedError` imported from its ES module build, and the other way round (a bundle
 * that both imports and requires the kit holds both builds; so does an application with the kit
 * installed twice). Node itself loads one build whichever way the kit is imported (the package's
 * `node` condition), so there the classes are the very same objects; elsewhere each error carries
 * the names of its kit classes under a registered symbol, and each kit class's `instanceof` asks
 * for its own name. A class of yours that extends one of them is judged by its prototype, as usual.
 */

/** The same symbol in every copy of the kit: where an error keeps the names of its kit classes. */
const KINDS = Symbol.for('@rxfleet/operators.errorKinds');
/** Each kit class's own name for `instanceof`, as a static property; a subclass of yours has none of its own. */
const KIND = Symbol.for('@rxfleet/operators.errorKind');

const isByPrototype = Function.prototype[Symbol.hasInstance];

/**
 * Marks a kit class (from its static block): the class keeps its name for `instanceof`, and its
 * prototype the names of every kit class from the base down to it, which its instances inherit.
 */
function mark(kitClass: { prototype: object }, name: string): void {
  const above = (Object.getPrototypeOf(kitClass.prototype) as { [KINDS]?: readonly string[] })[KINDS] ?? [];
  Object.defineProperty(kitClass, KIND, { value: name });
  Object.defineProperty(kitClass.prototype, KINDS, { value: Object.freeze([...above, name]) });
}

/**
 * Base of every error the kit raises.
 *
 * @example Tell the kit's own failures from your work's
 * ```ts
 * results$.subscribe(({ outcome }) => {
 *   if (outcome.status === 'failed' && outcome.error instanceof NoOutcomeError) log.warn('work ended without an outcome');
 * });
 * ```
 *
 * @group Errors
 */
export class OperatorKitError extends Error {
  /** `'OperatorKitError'`, the same in every version: for logs and for telling errors apart without `instanceof`. */
  override readonly name: string = 'OperatorKitError';

  static {
    mark(this, 'OperatorKitError');
  }

  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }

  /**
   * `instanceof` across copies of the kit (see the module comment): true for an instance of this
   * class by its prototype, or for an error of another copy whose kit classes include this one.
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (isByPrototype.call(this, value)) return true;
    if (!Object.prototype.hasOwnProperty.call(this, KIND)) return false;
    const kinds = (value as { [KINDS]?: unknown } | null | undefined)?.[KINDS];
    return Array.isArray(kinds) && kinds.includes((this as unknown as { [KIND]: string })[KIND]);
  }
}

/**
 * A unit of work given to {@link workerPool} completed without emitting its outcome: the pool's
 * form of rxjs's `EmptyError`. It is the `error` of that ticket's `failed` outcome.
 *
 * @group Errors
 */
export class NoOutcomeError extends OperatorKitError {
  /** `'NoOutcomeError'`, the same in every version: for logs and for telling errors apart without `instanceof`. */
  override readonly name: string = 'NoOutcomeError';

  static {
    mark(this, 'NoOutcomeError');
  }

  constructor(options?: ErrorOptions) {
    super('work completed without an outcome', options);
  }
}

/**
 * A read given to {@link readPerKey} completed without emitting its answer: the keyed read's form
 * of rxjs's `EmptyError`. It is the `error` of that read's `failed` result.
 *
 * @group Errors
 */
export class NoAnswerError extends OperatorKitError {
  /** `'NoAnswerError'`, the same in every version: for logs and for telling errors apart without `instanceof`. */
  override readonly name: string = 'NoAnswerError';

  static {
    mark(this, 'NoAnswerError');
  }

  constructor(options?: ErrorOptions) {
    super('read completed without an answer', options);
  }
}

/**
 * The reason {@link fromAbortable} aborts its signal with when the Observable is unsubscribed
 * before the work settled: nobody wants the answer any more.
 *
 * @group Errors
 */
export class UnsubscribedError extends OperatorKitError {
  /** `'UnsubscribedError'`, the same in every version: for logs and for telling errors apart without `instanceof`. */
  override readonly name: string = 'UnsubscribedError';

  static {
    mark(this, 'UnsubscribedError');
  }

  constructor(options?: ErrorOptions) {
    super('unsubscribed', options);
  }
}

/**
 * The reason carried by a {@link PauseGate.signal} that aborted because the gate paused. Extend it
 * for a domain-specific pause error (its `name` can be overridden).
 *
 * @example
 * ```ts
 * class LostLeadership extends PausedError {
 *   override readonly name = 'LostLeadership';
 * }
 * if (error instanceof PausedError) return; // paused, not failed: try again once resumed
 * ```
 *
 * @group Errors
 */
export class PausedError extends OperatorKitError {
  /** `'PausedError'`, the same in every version: for logs and for telling errors apart without `instanceof`. */
  override readonly name: string = 'PausedError';

  static {
    mark(this, 'PausedError');
  }

  constructor(message = 'paused', options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * A line longer than the limit reached {@link splitLines}: the stream is not read further. Its
 * `maxBytes` is the limit it broke.
 *
 * @group Errors
 */
export class LineTooLongError extends OperatorKitError {
  /** `'LineTooLongError'`, the same in every version: for logs and for telling errors apart without `instanceof`. */
  override readonly name: string = 'LineTooLongError';

  static {
    mark(this, 'LineTooLongError');
  }

  constructor(
    /** The limit the line broke, in bytes. */
    readonly maxBytes: number,
    options?: ErrorOptions,
  ) {
    super(`a line longer than ${maxBytes} bytes`, options);
  }
}
