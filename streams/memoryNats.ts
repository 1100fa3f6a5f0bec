import {
  ClosedConnectionError,
  InvalidOperationError,
  Msg,
  MsgCallback,
  MsgHdrs,
  MsgHdrsImpl,
  NatsConnection,
  NoRespondersError,
  Payload,
  PublishOptions,
  RequestError,
  RequestOptions,
  Stats,
  Status,
  Subscription,
  SubscriptionOptions,
  TimeoutError,
  headers as makeHeaders,
  nuid,
} from '@nats-io/transport-node';
import { BehaviorSubject } from 'rxjs';
import { ConnectionState, FleetConnection, fleetConnectionOf } from './natsConnection';

/**
 * A NATS server in this process's memory, for the demo when no `nats-server` is installed and for
 * fast unit tests. It implements the part of nats.js's `NatsConnection` rxfleet uses, with NATS's
 * semantics (spec/streams/memoryNats.spec.ts runs the same cases against a real nats-server):
 *
 * - subjects of `.`-separated tokens; subscriptions with `*` (one token) and `>` (one or more
 *   trailing tokens);
 * - queue groups: each message goes to one member of each group, and to every plain subscriber;
 * - delivery is asynchronous and in publish order, batched on `setImmediate` so a storm of
 *   request and reply never starves timers and I/O;
 * - a publish with a reply subject that no subscription matches gets the server's no-responders
 *   status (an empty message whose headers carry code 503) on the reply subject;
 * - request/reply with a timeout (`TimeoutError`) and no responders (`RequestError` caused by
 *   `NoRespondersError`), replies under the connection's `inboxPrefix`;
 * - headers (copied, as a wire would), `max` on subscriptions, `unsubscribe`, `drain`, `close`,
 *   `closed()`, `status()` (never a reconnect: nothing can disconnect).
 *
 * Not implemented: JetStream (use {@link MemoryElectionBucket} for the election), `requestMany`.
 */
export class MemoryNatsServer {
  private readonly subscriptions = new Set<MemorySubscription>();
  private readonly queue: Array<() => void> = [];
  private scheduled = false;
  private readonly groupTurns = new Map<string, number>();
  private sids = 0;

  /** A new client connection. */
  connect(options: { name?: string; inboxPrefix?: string } = {}): NatsConnection {
    return new MemoryNatsConnection(this, options.name ?? '', options.inboxPrefix ?? '_INBOX') as unknown as NatsConnection;
  }

  /** Subscriptions open now, on every connection. */
  get subscriptionCount(): number {
    return this.subscriptions.size;
  }

  /** @internal */
  _subscribe(sub: MemorySubscription): number {
    this.subscriptions.add(sub);
    return ++this.sids;
  }

  /** @internal */
  _unsubscribe(sub: MemorySubscription): void {
    this.subscriptions.delete(sub);
  }

  /**
   * @internal Routes one message: matching plain subscriptions all get it, each queue group one
   * member. Returns whether anyone was subscribed (no-responders is decided at publish, as a server does).
   */
  _route(subject: string, data: Uint8Array, reply: string | undefined, headers: MsgHdrs | undefined): boolean {
    const tokens = subject.split('.');
    const plain: MemorySubscription[] = [];
    const groups = new Map<string, MemorySubscription[]>();
    for (const sub of this.subscriptions) {
      if (!sub.matches(tokens)) continue;
      if (sub.queue === undefined) plain.push(sub);
      else {
        const members = groups.get(sub.queue) ?? [];
        members.push(sub);
        groups.set(sub.queue, members);
      }
    }
    const targets = [...plain];
    for (const [group, members] of groups) {
      const turn = this.groupTurns.get(group) ?? 0;
      this.groupTurns.set(group, turn + 1);
      targets.push(members[turn % members.length]);
    }
    for (const sub of targets) {
      const copy = headers === undefined ? undefined : copyHeaders(headers);
      this.enqueue(() => sub.deliver(subject, data, reply, copy));
    }
    if (targets.length === 0 && reply !== undefined) {
      // The server's no-responders status, as nats-server sends it to clients that support headers.
      this.enqueue(() => this._route(reply, new Uint8Array(0), undefined, makeHeaders(503, 'No Responders')));
    }
    return targets.length > 0;
  }

  /** @internal Resolves once everything queued before the call has been delivered. */
  _flush(): Promise<void> {
    return new Promise((resolve) => this.enqueue(resolve));
  }

  private enqueue(work: () => void): void {
    this.queue.push(work);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.run());
  }

  private run(): void {
    // Only what was queued before this batch: work queued while delivering waits for the next turn.
    const batch = this.queue.splice(0, this.queue.length);
    this.scheduled = false;
    for (const work of batch) work();
    if (this.queue.length > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.run());
    }
  }
}

function copyHeaders(h: MsgHdrs): MsgHdrs {
  const copy = (h.code > 0 ? makeHeaders(h.code, h.description === '' ? 'status' : h.description) : makeHeaders()) as MsgHdrsImpl;
  for (const [key, values] of h) for (const value of values) copy.append(key, value);
  return copy;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const bytes = (payload: Payload | undefined): Uint8Array => (payload === undefined ? new Uint8Array(0) : typeof payload === 'string' ? encoder.encode(payload) : payload);

function validSubject(subject: string, wildcards: boolean): boolean {
  if (subject === '' || /\s/.test(subject)) return false;
  const tokens = subject.split('.');
  return tokens.every((t, i) => t !== '' && (wildcards ? (t === '>' ? i === tokens.length - 1 : !t.includes('>')) && (t === '*' || !t.includes('*')) : !t.includes('*') && !t.includes('>')));
}

class MemoryMsg implements Msg {
  constructor(
    readonly subject: string,
    readonly sid: number,
    readonly data: Uint8Array,
    readonly reply: string | undefined,
    readonly headers: MsgHdrs | undefined,
    private readonly connection: MemoryNatsConnection,
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

class MemorySubscription implements Subscription {
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
    private readonly server: MemoryNatsServer,
    private readonly connection: MemoryNatsConnection,
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

  matches(subject: string[]): boolean {
    const pattern = this.tokens;
    for (let i = 0; i < pattern.length; i++) {
      if (pattern[i] === '>') return subject.length > i;
      if (i >= subject.length) return false;
      if (pattern[i] !== '*' && pattern[i] !== subject[i]) return false;
    }
    return subject.length === pattern.length;
  }

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

  close(): void {
    if (this.isDone) return;
    this.isDone = true;
    this.server._unsubscribe(this);
    this.connection._forget(this);
    for (const reader of this.readers.splice(0)) reader({ value: undefined, done: true });
    this.resolveClosed();
  }
}

class MemoryNatsConnection {
  readonly info = undefined;
  private readonly subscriptions = new Set<MemorySubscription>();
  private closedFlag = false;
  private draining = false;
  private resolveClosed!: (value: void | Error) => void;
  private readonly closedPromise: Promise<void | Error>;
  private readonly counters = { inBytes: 0, outBytes: 0, inMsgs: 0, outMsgs: 0 };
  private readonly statusWaiters: Array<(result: IteratorResult<Status>) => void> = [];

  constructor(
    private readonly server: MemoryNatsServer,
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
    this.publish(msg.subject, msg.data, { ...(msg.reply !== undefined ? { reply: msg.reply } : {}), ...(msg.headers !== undefined ? { headers: msg.headers } : {}) });
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
    const inbox = `${this.inboxPrefix}.${nuid.next()}`;
    return new Promise<Msg>((resolve, reject) => {
      // Replies are delivered asynchronously, so the timer below is always set before this runs.
      const sub = this.subscribe(inbox, {
        max: 1,
        callback: (_, msg) => {
          clearTimeout(timer);
          if (msg.data.length === 0 && msg.headers?.code === 503) reject(new RequestError(`no responders: '${subject}'`, { cause: new NoRespondersError(subject) }));
          else resolve(msg);
        },
      });
      const timer = setTimeout(() => {
        sub.unsubscribe();
        reject(new TimeoutError());
      }, options.timeout);
      try {
        this.publishAndCount(subject, payload, { reply: inbox, ...(options.headers !== undefined ? { headers: options.headers } : {}) });
      } catch (error) {
        clearTimeout(timer);
        sub.unsubscribe();
        reject(error as Error);
      }
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
        next: () => (this.closedFlag ? Promise.resolve({ value: undefined, done: true }) : new Promise<IteratorResult<Status>>((resolve) => this.statusWaiters.push(resolve))),
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
  _forget(sub: MemorySubscription): void {
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

/** An in-memory connection as the daemon's {@link FleetConnection}: always connected until drained. */
export function memoryFleetConnection(nc: NatsConnection): FleetConnection {
  const state = new BehaviorSubject<ConnectionState>('connected');
  void nc.closed().then(() => {
    state.next('closed');
    state.complete();
  });
  return fleetConnectionOf(nc, state);
}
