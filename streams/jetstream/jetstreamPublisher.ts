import { NatsConnection, headers } from '@nats-io/transport-node';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import { Subscription } from 'rxjs';
import { Logger, silentLogger } from '../../lib/logger';
import { RateLimitedLog } from '../../lib/rateLimitedLog';
import { INSTANCE_SEQ_HEADER, MSG_ID_HEADER } from '../../lib/enricher/jetstream/eventIdentity';
import { DurableMessage, Flight, PublishLine } from '../../lib/enricher/jetstream/publishLine';
import { RetryReason } from '../../lib/enricher/metrics/durableMetrics';
import { FleetConnection } from '../natsConnection';
import { PublishResult } from '../natsPublisher';
import { StateWriter } from './stateWriter';

/** What the publisher tells whoever counts. */
export interface JetStreamPublisherHooks {
  /** An event's fate, once: `sent` (acknowledged), `dropped` (pushed out waiting, or abandoned), `failed` (refused by the stream). */
  onResult?(result: PublishResult): void;
  /** Events not yet acknowledged, and those of them sent, after each change. */
  onHeld?(held: number, unacked: number): void;
  /** First send to acknowledgement, seconds. */
  onAck?(seconds: number): void;
  onRetry?(reason: RetryReason): void;
  onDuplicate?(stored: boolean): void;
}

/** Options for {@link JetStreamPublisher}. */
export interface JetStreamPublisherOptions {
  connection: FleetConnection;
  /** The stream (a duplicate acknowledgement is checked against it). */
  stream: string;
  line: PublishLine;
  /** The state bucket's writer, when there is one. */
  state?: StateWriter;
  ackTimeoutMs: number;
  logger?: Logger;
  hooks?: JetStreamPublisherHooks;
  /** The pause before sending again after a failure: this, doubling to 5 s while failures go on. Default 250 ms. */
  retryMs?: number;
}

interface Ack {
  stream?: string;
  seq?: number;
  duplicate?: boolean;
  error?: { code?: number; err_code?: number; description?: string };
}

const decoder = new TextDecoder();
/** JetStream's "message size exceeds maximum allowed": a refusal no retry changes. */
const TOO_LARGE = 10054;

/**
 * Publishes to a JetStream stream without ever blocking or throwing at the caller, holding every
 * event until the stream acknowledges it (`PublishLine` decides what goes when; this file does the
 * sending and hears the answers):
 *
 * - Each publish carries its `Nats-Msg-Id` and, for an instance event, `Rxfleet-Instance-Seq`,
 *   and waits `ackTimeoutMs` for its acknowledgement; no acknowledgement (a timeout, an error, the
 *   connection lost) is a retry of the same message, after a pause of 250 ms doubling to 5 s, never
 *   a silent loss.
 * - An acknowledgement marked duplicate is checked: the stream must hold a message with that id at
 *   the sequence it names. One it does not hold (nats-server #6415: a publish in flight across a
 *   stream leader change, remembered by the duplicate window but never stored) is sent again under
 *   a new id, its instance sequence unchanged: consumers drop repeats by that sequence.
 * - Acknowledged events leave in the order they were first sent, to the state bucket's writer.
 * - `close` waits (up to `drainTimeoutMs`) for everything held to be acknowledged and written;
 *   what is left is `dropped`. `abandon` drops everything at once (a standby that lost the election).
 */
export class JetStreamPublisher {
  private readonly logger: Logger;
  private readonly failures: RateLimitedLog;
  private readonly nc: NatsConnection;
  private readonly sentAt = new WeakMap<Flight, number>();
  private readonly stateSubscription: Subscription;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs: number;
  /** No new events (closing or dropped). */
  private closed = false;
  /** Nothing more is sent (dropped). */
  private dropped = false;
  private idle: (() => void) | undefined;

  constructor(private readonly options: JetStreamPublisherOptions) {
    this.logger = options.logger ?? silentLogger;
    this.failures = new RateLimitedLog({ logger: this.logger });
    this.nc = options.connection.nc;
    this.retryMs = options.retryMs ?? 250;
    options.state?.onSettle(() => this.report());
    this.stateSubscription = options.connection.state$.subscribe((state) => {
      if (state === 'connected') {
        options.line.connected = true;
        options.state?.connected(true);
        this.flush();
      } else if (options.line.connected) {
        options.line.disconnected();
        options.state?.connected(false);
        for (let i = options.line.unacked; i > 0; i--) options.hooks?.onRetry?.('disconnected');
      }
    });
  }

  /** Events not yet acknowledged. */
  get held(): number {
    return this.options.line.held;
  }

  /** Hands one event over; never throws, never waits. */
  publish(message: DurableMessage): void {
    if (this.closed) {
      this.options.hooks?.onResult?.('dropped');
      return;
    }
    this.options.line.add(message);
    this.flush();
  }

  /** Waits until everything held is acknowledged and in the bucket, or `timeoutMs` passed; drops what is left. */
  async close(timeoutMs = 5000): Promise<void> {
    this.closed = true;
    if (!this.settled()) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => (this.idle = resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
      clearTimeout(timer);
    }
    const dropped = this.drop();
    if (dropped > 0) this.logger.warn({ dropped }, 'stopping with events the stream has not acknowledged: dropped');
    await this.options.state?.close(timeoutMs);
  }

  /** Drops everything not acknowledged, now, and writes nothing more into the bucket; how many. */
  abandon(): number {
    this.options.state?.abandon();
    return this.drop();
  }

  private drop(): number {
    this.closed = true;
    this.dropped = true;
    clearTimeout(this.retryTimer);
    this.stateSubscription.unsubscribe();
    this.failures.close();
    const { dropped, acknowledged } = this.options.line.abandon();
    for (let i = 0; i < acknowledged; i++) this.options.hooks?.onResult?.('sent');
    for (let i = 0; i < dropped; i++) this.options.hooks?.onResult?.('dropped');
    this.report();
    return dropped;
  }

  private settled(): boolean {
    return this.options.line.held === 0 && (this.options.state?.settled() ?? true);
  }

  private report(): void {
    this.options.hooks?.onHeld?.(this.options.line.held, this.options.line.unacked);
    if (this.idle !== undefined && this.settled()) {
      this.idle();
      this.idle = undefined;
    }
  }

  private flush(): void {
    if (this.dropped) return;
    for (const flight of this.options.line.take()) this.send(flight);
    this.report();
  }

  private send(flight: Flight): void {
    const { attempt } = flight;
    if (!this.sentAt.has(flight)) this.sentAt.set(flight, performance.now());
    const h = headers();
    h.set(MSG_ID_HEADER, flight.id);
    if (flight.seq !== undefined) h.set(INSTANCE_SEQ_HEADER, String(flight.seq));
    let request: Promise<{ data: Uint8Array }>;
    try {
      request = this.nc.request(flight.message.subject, flight.data, { headers: h, timeout: this.options.ackTimeoutMs });
    } catch (error) {
      request = Promise.reject(error);
    }
    request.then(
      (reply) => this.answered(flight, attempt, reply.data),
      (error: unknown) => this.failed(flight, attempt, error, /timeout/i.test(String((error as Error).message)) ? 'timeout' : 'error'),
    );
  }

  private answered(flight: Flight, attempt: number, data: Uint8Array): void {
    let ack: Ack;
    try {
      ack = JSON.parse(decoder.decode(data)) as Ack;
    } catch {
      ack = { error: { description: 'the acknowledgement was not JSON' } };
    }
    if (ack.error !== undefined || typeof ack.seq !== 'number') {
      const reason = ack.error?.description ?? 'no sequence in the acknowledgement';
      if (ack.error?.err_code === TOO_LARGE) {
        if (this.options.line.refuse(flight, attempt)) {
          this.failures.log(
            'refused',
            { subject: flight.message.subject, bytes: flight.data.length, reason },
            'the stream refused an event',
          );
          this.released();
        }
        return;
      }
      this.failed(flight, attempt, new Error(reason), 'error');
      return;
    }
    const verdict = this.options.line.ack(flight, attempt, ack.seq, ack.duplicate === true);
    if (verdict === 'verify') this.verify(flight, attempt);
    else if (verdict === 'acked') this.released();
  }

  // A duplicate acknowledgement names the sequence holding the first copy: it must be ours.
  private verify(flight: Flight, attempt: number): void {
    const seq = flight.streamSeq ?? 0;
    const stored =
      seq === 0
        ? Promise.resolve(false)
        : jetstreamManager(this.nc)
            .then((jsm) => jsm.streams.getMessage(this.options.stream, { seq }))
            .then(
              (message) => message?.header.get(MSG_ID_HEADER) === flight.id,
              (error: unknown) => {
                // The sequence holds nothing (removed, or never stored): not ours.
                if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.NoMessageFound) return false;
                throw error;
              },
            );
    stored.then(
      (yes) => {
        this.options.hooks?.onDuplicate?.(yes);
        if (!yes) {
          this.logger.warn(
            { id: flight.id, seq },
            'a duplicate acknowledgement for an event the stream does not hold: sending it again under a new id',
          );
          this.options.hooks?.onRetry?.('not_stored');
        }
        this.options.line.verified(flight, yes);
        if (yes) this.released();
        else this.scheduleRetry();
      },
      (error: unknown) => this.failed(flight, attempt, error, 'error'),
    );
  }

  private failed(flight: Flight, attempt: number, error: unknown, reason: RetryReason): void {
    if (!this.options.line.fail(flight, attempt)) return;
    this.options.hooks?.onRetry?.(reason);
    this.failures.log(
      reason,
      { err: error, subject: flight.message.subject, id: flight.id },
      'a publish to the stream got no acknowledgement: sending it again',
    );
    this.scheduleRetry();
    this.report();
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== undefined || this.dropped) return;
    const wait = this.retryMs;
    this.retryMs = Math.min(this.retryMs * 2, 5000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.options.line.retry();
      this.flush();
    }, wait);
  }

  private released(): void {
    this.retryMs = this.options.retryMs ?? 250;
    const now = performance.now();
    for (const flight of this.options.line.release()) {
      if (flight.state === 'refused') {
        this.options.hooks?.onResult?.('failed');
        continue;
      }
      const at = this.sentAt.get(flight);
      if (at !== undefined) this.options.hooks?.onAck?.((now - at) / 1000);
      this.options.hooks?.onResult?.('sent');
      this.options.state?.take(flight);
    }
    this.options.state?.flush();
    this.flush();
  }
}
