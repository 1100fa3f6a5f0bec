import { MsgHdrs, Payload, PublishOptions } from '@nats-io/transport-node';

/**
 * What the in-memory transport's parts know of each other, so that each file depends on these
 * shapes and not on the classes that implement them: the server routes and flushes, a connection
 * publishes and forgets its ended subscriptions, a subscription matches and delivers.
 */

/** A subscription as the server routes to it. */
export interface RoutedSubscription {
  /** The queue group, or `undefined` for a plain subscriber. */
  readonly queue: string | undefined;
  /** Whether a message on `subject` (split into tokens) is for this subscription. */
  matches(subject: string[]): boolean;
  deliver(subject: string, data: Uint8Array, reply: string | undefined, headers: MsgHdrs | undefined): void;
  /** Ends the subscription now. */
  close(): void;
}

/** The server as its connections and subscriptions use it. */
export interface MemoryRouter {
  /** Registers a subscription and returns its id. */
  _subscribe(sub: RoutedSubscription): number;
  _unsubscribe(sub: RoutedSubscription): void;
  /** Routes one message; returns whether anyone was subscribed. */
  _route(subject: string, data: Uint8Array, reply: string | undefined, headers: MsgHdrs | undefined): boolean;
  /** Resolves once everything queued before the call has been delivered. */
  _flush(): Promise<void>;
}

/** The connection a subscription was made on, as the subscription and its messages use it. */
export interface SubscriptionOwner {
  isClosed(): boolean;
  publish(subject: string, payload?: Payload, options?: PublishOptions): void;
  /** Forgets a subscription that ended. */
  _forget(sub: RoutedSubscription): void;
}
