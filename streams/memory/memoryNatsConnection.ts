import {
  ClosedConnectionError,
  InvalidOperationError,
  Msg,
  Payload,
  PublishOptions,
  RequestOptions,
  Stats,
  Status,
  Subscription,
  SubscriptionOptions,
  nuid,
} from '@nats-io/transport-node';
import type { MemoryRouter, RoutedSubscription, SubscriptionOwner } from './memoryNatsParts';
import { awaitReply } from './memoryNatsRequest';
import { validSubject } from './memoryNatsSubjects';
import { MemorySubscription } from './memoryNatsSubscription';

const encoder = new TextEncoder();
const bytes = (payload: Payload | undefined): Uint8Array =>
  payload === undefined ? new Uint8Array(0) : typeof payload === 'string' ? encoder.encode(payload) : payload;

/**
 * One client connection to the in-memory server (`MemoryNatsServer`): the part of nats.js's `NatsConnection`
 * rxfleet uses. Publishing checks the subject and counts what goes out; closing ends every
 * subscription it made; nothing can disconnect it, so `status()` only ends when it closes.
 */
export class MemoryNatsConnection implements SubscriptionOwner {
  readonly info = undefined;
  private readonly subscriptions = new Set<RoutedSubscription>();
  private closedFlag = false;
  private draining = false;
  private resolveClosed!: (value: void | Error) => void;
  private readonly closedPromise: Promise<void | Error>;
  private readonly counters = { inBytes: 0, outBytes: 0, inMsgs: 0, outMsgs: 0 };
  private readonly statusWaiters: Array<(result: IteratorResult<Status>) => void> = [];

  constructor(
    private readonly server: MemoryRouter,
    readonly name: string,
    private readonly inboxPrefix: string,
  ) {
    this.closedPromise = new Promise((resolve) => (this.resolveClosed = resolve));
  }

  closed(): Promise<void | Error> {
    return this.closedPromise;
  }

  async close(): Promise<void> {
    if (this.closedFlag) return;
    this.closedFlag = true;
    for (const sub of [...this.subscriptions]) sub.close();
    for (const waiter of this.statusWaiters.splice(0)) waiter({ value: undefined, done: true });
    this.resolveClosed();
  }

  publish(subject: string, payload?: Payload, options?: PublishOptions): void {
    this.publishAndCount(subject, payload, options);
  }

  publishMessage(msg: Msg): void {
    this.publish(msg.subject, msg.data, {
      ...(msg.reply !== undefined ? { reply: msg.reply } : {}),
      ...(msg.headers !== undefined ? { headers: msg.headers } : {}),
    });
  }

  respondMessage(msg: Msg): boolean {
    if (msg.reply === undefined || msg.reply === '') return false;
    this.publish(msg.reply, msg.data, msg.headers !== undefined ? { headers: msg.headers } : {});
    return true;
  }

  subscribe(subject: string, options: SubscriptionOptions = {}): Subscription {
    if (this.closedFlag) throw new ClosedConnectionError();
    if (!validSubject(subject, true)) throw new Error(`invalid subject: ${JSON.stringify(subject)}`);
    const sub = new MemorySubscription(this.server, this, subject, options);
    this.subscriptions.add(sub);
    return sub;
  }

  request(subject: string, payload?: Payload, options: RequestOptions = { timeout: 1000 }): Promise<Msg> {
    if (this.closedFlag) return Promise.reject(new ClosedConnectionError());
    return awaitReply({
      subject,
      inbox: `${this.inboxPrefix}.${nuid.next()}`,
      timeoutMs: options.timeout,
      subscribe: (inbox, subscriptionOptions) => this.subscribe(inbox, subscriptionOptions),
      send: (inbox) =>
        this.publishAndCount(subject, payload, { reply: inbox, ...(options.headers !== undefined ? { headers: options.headers } : {}) }),
    });
  }

  requestMany(): Promise<AsyncIterable<Msg>> {
    return Promise.reject(new InvalidOperationError('requestMany is not supported by the in-memory transport'));
  }

  flush(): Promise<void> {
    if (this.closedFlag) return Promise.reject(new ClosedConnectionError());
    return this.server._flush();
  }

  async drain(): Promise<void> {
    if (this.closedFlag) throw new ClosedConnectionError();
    this.draining = true;
    await this.server._flush();
    await this.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  isClosed(): boolean {
    return this.closedFlag;
  }

  isDraining(): boolean {
    return this.draining && !this.closedFlag;
  }

  getServer(): string {
    return 'memory://localhost';
  }

  status(): AsyncIterable<Status> {
    // Nothing can disconnect a connection in memory: the iterator only ends when it closes.
    return {
      [Symbol.asyncIterator]: () => ({
        next: () =>
          this.closedFlag
            ? Promise.resolve({ value: undefined, done: true })
            : new Promise<IteratorResult<Status>>((resolve) => this.statusWaiters.push(resolve)),
      }),
    };
  }

  stats(): Stats {
    return { ...this.counters };
  }

  rtt(): Promise<number> {
    return Promise.resolve(0);
  }

  reconnect(): Promise<void> {
    return Promise.resolve();
  }

  /** @internal */
  _forget(sub: RoutedSubscription): void {
    this.subscriptions.delete(sub);
  }

  private publishAndCount(subject: string, payload: Payload | undefined, options: PublishOptions | undefined): void {
    if (this.closedFlag) throw new ClosedConnectionError();
    if (!validSubject(subject, false)) throw new Error(`invalid subject: ${JSON.stringify(subject)}`);
    const data = bytes(payload);
    this.counters.outMsgs++;
    this.counters.outBytes += data.length;
    this.server._route(subject, data, options?.reply, options?.headers);
  }
}
