import { Msg, MsgCallback, MsgHdrs, Payload, PublishOptions, Subscription, SubscriptionOptions } from '@nats-io/transport-node';
import type { MemoryRouter, RoutedSubscription, SubscriptionOwner } from './memoryNatsParts';
import { subjectMatches } from './memoryNatsSubjects';

const decoder = new TextDecoder();

/** A message as a subscriber receives it; `respond` publishes on its reply subject through the connection that received it. */
class MemoryMsg implements Msg {
  constructor(
    readonly subject: string,
    readonly sid: number,
    readonly data: Uint8Array,
    readonly reply: string | undefined,
    readonly headers: MsgHdrs | undefined,
    private readonly connection: SubscriptionOwner,
  ) {}

  respond(payload?: Payload, opts?: PublishOptions): boolean {
    if (this.reply === undefined || this.connection.isClosed()) return false;
    this.connection.publish(this.reply, payload, opts);
    return true;
  }

  json<T>(): T {
    return JSON.parse(this.string()) as T;
  }

  string(): string {
    return decoder.decode(this.data);
  }
}

/**
 * One subscription on the in-memory server, with nats.js's semantics: a callback, or an async
 * iterator when none is given; `max` (closing after that many messages), `unsubscribe(max)`,
 * `drain` (after what is queued has been delivered); a throwing callback does not end it.
 */
export class MemorySubscription implements Subscription, RoutedSubscription {
  readonly callback: MsgCallback<Msg>;
  readonly queue: string | undefined;
  readonly closed: Promise<void>;
  private readonly tokens: string[];
  private readonly sid: number;
  private resolveClosed!: () => void;
  private isDone = false;
  private received = 0;
  private processed = 0;
  private max: number | undefined;
  // Iterator mode (no callback): messages wait here for a reader.
  private readonly pending: Msg[] = [];
  private readonly readers: Array<(result: IteratorResult<Msg>) => void> = [];

  constructor(
    private readonly server: MemoryRouter,
    private readonly connection: SubscriptionOwner,
    private readonly subject: string,
    options: SubscriptionOptions,
  ) {
    this.tokens = subject.split('.');
    this.queue = options.queue === undefined || options.queue === '' ? undefined : options.queue;
    this.max = options.max;
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    const user = options.callback;
    this.callback =
      user ??
      ((_, msg) => {
        const reader = this.readers.shift();
        if (reader !== undefined) reader({ value: msg, done: false });
        else this.pending.push(msg);
      });
    this.sid = server._subscribe(this);
  }

  /** Whether a message published on `subject` (split into tokens) is for this subscription. */
  matches(subject: string[]): boolean {
    return subjectMatches(this.tokens, subject);
  }

  /** Hands one message to the callback or the iterator; a closed subscription drops it. */
  deliver(subject: string, data: Uint8Array, reply: string | undefined, headers: MsgHdrs | undefined): void {
    if (this.isDone) return;
    this.received++;
    const msg = new MemoryMsg(subject, this.sid, data, reply, headers, this.connection);
    try {
      this.callback(null, msg);
    } catch {
      // A throwing callback does not break the subscription, as in nats.js.
    }
    this.processed++;
    if (this.max !== undefined && this.received >= this.max) this.close();
  }

  unsubscribe(max?: number): void {
    if (max !== undefined && max > this.received) {
      this.max = max;
      return;
    }
    this.close();
  }

  async drain(): Promise<void> {
    await this.server._flush();
    this.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.drain();
  }

  isDraining(): boolean {
    return false;
  }

  isClosed(): boolean {
    return this.isDone;
  }

  getSubject(): string {
    return this.subject;
  }

  getReceived(): number {
    return this.received;
  }

  getProcessed(): number {
    return this.processed;
  }

  getPending(): number {
    return this.pending.length;
  }

  getID(): number {
    return this.sid;
  }

  getMax(): number | undefined {
    return this.max;
  }

  [Symbol.asyncIterator](): AsyncIterator<Msg> {
    return {
      next: () => {
        const msg = this.pending.shift();
        if (msg !== undefined) return Promise.resolve({ value: msg, done: false });
        if (this.isDone) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.readers.push(resolve));
      },
    };
  }

  /** Ends the subscription now: it leaves the server and its connection, and waiting readers see the end. */
  close(): void {
    if (this.isDone) return;
    this.isDone = true;
    this.server._unsubscribe(this);
    this.connection._forget(this);
    for (const reader of this.readers.splice(0)) reader({ value: undefined, done: true });
    this.resolveClosed();
  }
}
