import { ObservableInput, Observer, Subscription, from } from 'rxjs';

/** The operator's output subscriber, as far as a handler's throw and a pass-through need it. */
export interface Output {
  error(error: unknown): void;
  complete(): void;
}

/**
 * The one subscriber every operator of the kit subscribes with: to its source, to its notifiers
 * (`reset`, `cancel`, `drain`, `restart`, `paused`) and to every inner (a unit of work, a read, a
 * settle observable, a listing). It plays the part of rxjs's internal `OperatorSubscriber`, which
 * 7.x does not export, and of rxjs-etc's.
 *
 * Why one class rather than an observer object per subscription:
 * - The rxjs contract: a callback of the user's that throws inside a handler (a key selector, a
 *   predicate, a hook, a ticket's `start`) errors the operator's output. Routed anywhere else it
 *   would reach rxjs's unhandled-error hook and leave the operator half-updated: a slot taken and
 *   no work subscribed, a request lost. Every handler runs inside this class's guard, so no
 *   operator can forget it.
 * - Once it has seen `error` or `complete`, or been unsubscribed, it ignores everything, so a
 *   producer that misbehaves cannot make an operator act twice.
 * - It is an `Observer` and a `Subscription`, which rxjs recognises as a subscriber and hands to
 *   the producer as is: no `SafeSubscriber` wrapper, no observer object and no closures per inner.
 *   Hot paths subclass it and keep their per-item state in fields, so an inner costs one object.
 *   `closed` is what a synchronous producer (an array, `from(iterable)`) checks between values.
 *
 * A subclass overrides `onNext` (required), and `onError` / `onComplete`, whose defaults pass the
 * notification on to the output. After `error` or `complete` it unsubscribes itself, which runs
 * the producer's teardown.
 */
export abstract class OperatorSubscriber<T> extends Subscription implements Observer<T> {
  private stopped = false;

  constructor(protected readonly destination: Output) {
    super();
  }

  next(value: T): void {
    if (this.stopped) return;
    try {
      this.onNext(value);
    } catch (error) {
      this.destination.error(error);
    }
  }

  error(error: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    try {
      this.onError(error);
    } catch (thrown) {
      this.destination.error(thrown);
    }
    this.unsubscribe();
  }

  complete(): void {
    if (this.stopped) return;
    this.stopped = true;
    try {
      this.onComplete();
    } catch (thrown) {
      this.destination.error(thrown);
    }
    this.unsubscribe();
  }

  override unsubscribe(): void {
    this.stopped = true;
    super.unsubscribe();
  }

  protected abstract onNext(value: T): void;

  protected onError(error: unknown): void {
    this.destination.error(error);
  }

  protected onComplete(): void {
    this.destination.complete();
  }
}

/** The handlers of a subscription that is not on a hot path: a source, a notifier. */
export interface Handlers<T> {
  next: (value: T) => void;
  /** Default: the output errors. */
  error?: (error: unknown) => void;
  /** Default: the output completes. */
  complete?: () => void;
}

class HandlerSubscriber<T> extends OperatorSubscriber<T> {
  constructor(
    destination: Output,
    private readonly handlers: Handlers<T>,
  ) {
    super(destination);
  }

  protected onNext(value: T): void {
    this.handlers.next(value);
  }

  protected override onError(error: unknown): void {
    if (this.handlers.error === undefined) super.onError(error);
    else this.handlers.error(error);
  }

  protected override onComplete(): void {
    if (this.handlers.complete === undefined) super.onComplete();
    else this.handlers.complete();
  }
}

/**
 * Subscribes to `input` with `handlers` guarded as {@link OperatorSubscriber} guards them: a
 * handler's throw, and the notifications the handlers leave to their defaults, go to `output`.
 * The subscription is added to `owner` first (the output itself unless a part of it owns the
 * input, such as a round of `pacedSweep` that abandoning it must unsubscribe, or the output is a
 * `TrackedOutput` in front of the subscriber), so that
 * unsubscribing the owner reaches the input even while it is still emitting synchronously. An
 * input that is not an `ObservableInput` errors the output.
 *
 * @returns The subscription, already added to `owner`.
 */
export function subscribeWith<T>(output: Output & Subscription, input: ObservableInput<T>, handlers: Handlers<T>): Subscription;
export function subscribeWith<T>(output: Output, input: ObservableInput<T>, handlers: Handlers<T>, owner: Subscription): Subscription;
export function subscribeWith<T>(
  output: Output,
  input: ObservableInput<T>,
  handlers: Handlers<T>,
  owner: Subscription = output as Output & Subscription,
): Subscription {
  const subscriber = new HandlerSubscriber(output, handlers);
  owner.add(subscriber);
  subscribeInner(input, subscriber);
  return subscriber;
}

/**
 * `from(input).subscribe(subscriber)`, except that an input `from` refuses (a factory that
 * returned `undefined`, say) is an error delivered to `subscriber` rather than a throw.
 */
export function subscribeInner<T>(input: ObservableInput<T>, subscriber: OperatorSubscriber<T>): void {
  let observable;
  try {
    observable = from(input);
  } catch (error) {
    subscriber.error(error);
    return;
  }
  observable.subscribe(subscriber);
}
