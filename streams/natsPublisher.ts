import { BehaviorSubject, Observable, Subscription, distinctUntilChanged } from 'rxjs';
import { RingQueue } from '@rxfleet/operators';
import { Logger, silentLogger } from '../lib/logger';
import { RateLimitedLog } from '../lib/rateLimitedLog';
import { ConnectionState, FleetConnection } from './natsConnection';

/** What became of one message handed to {@link NatsPublisher.publish}. */
export type PublishResult = 'sent' | 'dropped' | 'failed';

/** `connecting` until the first connection, then the connection's own state. */
export type PublisherState = 'connecting' | ConnectionState;

/** Options for {@link NatsPublisher}. */
export interface NatsPublisherOptions {
  /**
   * Opens the connection (`openNatsConnection`, which waits for the first connect for ever). Called
   * once, at construction; `signal` aborts when the publisher closes before it connected.
   */
  open: (signal: AbortSignal) => Promise<FleetConnection>;
  /**
   * Messages held while there is no connection, sent in order once there is one. A message
   * arriving when this many are held pushes the oldest out: `dropped`, unless it has a key and no
   * later message with that key has come (see {@link NatsPublisher}). 0 holds nothing.
   */
  maxHeld: number;
  logger?: Logger;
  /** Told the fate of every message, once. */
  onResult?: (result: PublishResult) => void;
  /** Told how many messages are held, after each change. */
  onHeld?: (held: number) => void;
  /** How long `close` lets the connection drain before closing it. Default 5 s. */
  drainTimeoutMs?: number;
  /** When `open` fails (a TLS file that cannot be read), the wait before it is called again. Default 5 s. */
  retryOpenMs?: number;
}

interface Held {
  subject: string;
  data: string;
  /** What the message is the latest word on (an instance), when the caller says. */
  key?: string;
}

/**
 * Publishes to core NATS without ever blocking or throwing at the caller, whatever the connection
 * is doing: a daemon's pipeline hands each message over and moves on.
 *
 * - Connected: the message goes to the connection at once (`sent`).
 * - Not connected yet, or disconnected: it is held, in order, up to `maxHeld`; the oldest makes
 *   room. Held messages are sent, oldest first, as soon as the connection reports itself
 *   connected, before any later message. nats.js discards what it buffered when a dial attempt
 *   starts, so holding them here is what makes an outage lose nothing within `maxHeld`.
 * - Past `maxHeld`, a message pushed out of the hold that carries a key (the enricher's: one
 *   instance) is kept as that key's last word until a later message with the key comes, which
 *   supersedes it (`dropped`). Last words are sent before the hold when the connection is back,
 *   so a subscriber misses events of a long outage but ends with the latest for every key: what
 *   it holds converges. They cost one message per key (the instances), not one per event. A
 *   message without a key pushed out of the hold is `dropped` at once.
 * - The client refuses a message (larger than the server's `max_payload`, connection closed):
 *   `failed`, logged with its subject (the first five a minute, then a summary), never thrown.
 * - Closing: what is held when no connection is up is `dropped`; a live connection is drained
 *   (flushing everything sent) within `drainTimeoutMs`, else closed.
 *
 * Core NATS is at-most-once: a message handed to a connection whose socket has died but which has
 * not noticed yet is lost without being counted; subscribers that must not miss one use JetStream.
 */
export class NatsPublisher {
  private readonly logger: Logger;
  /** Refused messages: a stream of oversized events must not become a stream of lines. */
  private readonly refusals: RateLimitedLog;
  private readonly held: RingQueue<Held> = new RingQueue<Held>();
  private readonly state = new BehaviorSubject<PublisherState>('connecting');
  private readonly abort = new AbortController();
  private connection: FleetConnection | undefined;
  private stateSubscription: Subscription | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private opening: Promise<void> = Promise.resolve();
  private closing: Promise<void> | undefined;
  private droppedThisOutage = 0;
  /** Per key, the latest message pushed out of the hold; in the order they were pushed out. */
  private readonly lastWords = new Map<string, Held>();
  /** How many messages the hold has for each key. */
  private readonly heldKeys = new Map<string, number>();

  /** The connection's state: `connecting`, `connected`, `disconnected`, `closed`. */
  readonly state$: Observable<PublisherState>;

  constructor(private readonly options: NatsPublisherOptions) {
    this.logger = options.logger ?? silentLogger;
    this.refusals = new RateLimitedLog({ logger: this.logger });
    this.state$ = this.state.pipe(distinctUntilChanged());
    this.openOnce();
  }

  /** The current state. */
  get currentState(): PublisherState {
    return this.state.value;
  }

  /** Messages held for want of a connection: the hold and the keys' last words. */
  get heldCount(): number {
    return this.held.length + this.lastWords.size;
  }

  /**
   * Hands one message over; never throws, never waits. `key` names what the message is the latest
   * word on, so that an outage past the hold still ends with it delivered.
   */
  publish(subject: string, data: string, key?: string): void {
    if (this.closing !== undefined || this.state.value === 'closed') {
      this.result('dropped');
      return;
    }
    if (this.state.value === 'connected' && this.heldCount === 0) {
      this.send({ subject, data });
      return;
    }
    this.hold(key === undefined ? { subject, data } : { subject, data, key });
  }

  /** Stops: drains a live connection (or closes it after `drainTimeoutMs`), drops what is held otherwise. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private openOnce(): void {
    this.opening = this.options.open(this.abort.signal).then(
      (connection) => {
        if (this.closing !== undefined) {
          // Closed while the connection was on its way: nothing was sent on it.
          return void connection.nc.close().catch(() => undefined);
        }
        this.connection = connection;
        this.stateSubscription = connection.state$.subscribe((state) => this.onState(state));
      },
      (error: unknown) => {
        if (this.abort.signal.aborted) return;
        this.logger.error({ err: error, retryMs: this.options.retryOpenMs ?? 5000 }, 'cannot connect to NATS: trying again');
        this.retryTimer = setTimeout(() => this.openOnce(), this.options.retryOpenMs ?? 5000);
      },
    );
  }

  private onState(state: ConnectionState): void {
    this.state.next(state);
    if (state !== 'connected') return;
    if (this.droppedThisOutage > 0) {
      this.logger.warn({ dropped: this.droppedThisOutage }, 'NATS is back: messages dropped while it was unreachable');
      this.droppedThisOutage = 0;
    }
    const pending = this.heldCount;
    for (const [key, message] of this.lastWords) {
      if (this.state.value !== 'connected') break;
      this.lastWords.delete(key);
      this.send(message);
    }
    while (this.held.length > 0 && this.state.value === 'connected') this.send(this.take());
    if (pending > 0) {
      this.logger.info({ sent: pending - this.heldCount }, 'NATS is back: held messages sent');
      this.options.onHeld?.(this.heldCount);
    }
  }

  private send(message: Held): void {
    try {
      (this.connection as FleetConnection).nc.publish(message.subject, message.data);
      this.result('sent');
    } catch (error) {
      this.result('failed');
      this.refusals.log(
        'refused',
        { err: error, subject: message.subject, bytes: Buffer.byteLength(message.data) },
        'NATS refused a message',
      );
    }
  }

  private hold(message: Held): void {
    const { maxHeld } = this.options;
    if (maxHeld === 0) {
      this.dropOne();
      return;
    }
    // A later word on a key supersedes the last word kept for it.
    if (message.key !== undefined && this.lastWords.delete(message.key)) this.dropOne();
    if (this.held.length >= maxHeld) {
      const out = this.take();
      if (out.key === undefined || this.heldKeys.has(out.key) || message.key === out.key) this.dropOne();
      else this.lastWords.set(out.key, out);
    }
    this.held.push(message);
    if (message.key !== undefined) this.heldKeys.set(message.key, (this.heldKeys.get(message.key) ?? 0) + 1);
    this.options.onHeld?.(this.heldCount);
  }

  private take(): Held {
    const message = this.held.shift() as Held;
    if (message.key !== undefined) {
      const count = (this.heldKeys.get(message.key) ?? 1) - 1;
      if (count === 0) this.heldKeys.delete(message.key);
      else this.heldKeys.set(message.key, count);
    }
    return message;
  }

  private dropOne(): void {
    if (this.droppedThisOutage === 0) {
      this.logger.warn({ maxHeld: this.options.maxHeld }, 'NATS unreachable and the hold is full: dropping the oldest messages');
    }
    this.droppedThisOutage++;
    this.result('dropped');
  }

  private result(result: PublishResult): void {
    this.options.onResult?.(result);
  }

  private async shutDown(): Promise<void> {
    clearTimeout(this.retryTimer);
    this.refusals.close();
    const connection = this.connection;
    if (connection === undefined || this.state.value !== 'connected') {
      this.abort.abort();
      if (this.heldCount > 0) {
        this.logger.warn({ dropped: this.heldCount }, 'stopping while NATS is unreachable: held messages dropped');
        for (let n = this.heldCount; n > 0; n--) this.result('dropped');
        while (this.held.length > 0) this.take();
        this.lastWords.clear();
        this.options.onHeld?.(0);
      }
      await connection?.nc.close().catch(() => undefined);
    } else {
      const timeoutMs = this.options.drainTimeoutMs ?? 5000;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
      const outcome = await Promise.race([connection.drain().then(() => 'drained' as const), timedOut]);
      clearTimeout(timer);
      if (outcome === 'timeout') {
        this.logger.warn({ timeoutMs }, 'NATS did not drain in time: closing');
        await connection.nc.close().catch(() => undefined);
      }
      this.abort.abort();
    }
    // A connect still dialling gives up at its next attempt; waiting for it leaves nothing running.
    await this.opening;
    this.stateSubscription?.unsubscribe();
    this.state.next('closed');
    this.state.complete();
  }
}
