import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { SchedulerLike, Subscription as RxSubscription, asyncScheduler } from 'rxjs';
import { errorMessage } from '../../lib/choria/errors';
import { Logger, silentLogger } from '../../lib/logger';
import { formatGoDuration } from '../../lib/duration';
import { inputCollector } from '../inputCollector';

/** Options for {@link ReplyInbox}. */
export interface ReplyInboxOptions {
  logger?: Logger;
  /** Told the subject of every reply that arrived for no waiting request. */
  onUnsolicited?: (subject: string) => void;
  /** Times the new subscription after the broker refused one. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /** The first wait before subscribing again after a refusal; it doubles up to 30 s. Default 1 s. */
  resubscribeMs?: number;
}

/**
 * One subscription for every reply to one caller: `<collective>.reply.<md5(caller)>.*`, routed to
 * the request waiting for it by the subject's last token (the request id). go-choria subscribes
 * once per request (and opens a connection per RPC, DECISIONS P13); one wildcard subscription on the
 * daemon's one connection costs no SUB/UNSUB round per RPC and stays inside what the provisioning
 * account may subscribe to (`provisioning.reply.>`).
 *
 * Guarantees:
 * - The subscription is made on first use and lives until `close()`; it is registered with the
 *   server before any request published after `listen()` (one connection keeps the order).
 * - A reply for no waiting request (late, after a timeout, or for another process with the same
 *   caller id) is dropped, counted in `unsolicited` and handed to `onUnsolicited`.
 * - A subscription the broker refuses (a permissions violation) is logged at error and made again
 *   after 1 s, 2 s, 4 s ... 30 s, for as long as the inbox is open; requests meanwhile time out.
 * - A handler that throws is logged; it never breaks the subscription.
 */
export class ReplyInbox {
  private readonly handlers = new Map<string, (msg: Msg) => void>();
  private subscription: Subscription | undefined;
  private resubscribe: RxSubscription | undefined;
  private refusals = 0;
  private dropped = 0;
  private closed = false;
  private readonly logger: Logger;
  private readonly scheduler: SchedulerLike;

  constructor(
    private readonly nc: NatsConnection,
    /** `<collective>.reply.<md5(caller)>`. */
    readonly prefix: string,
    private readonly options: ReplyInboxOptions = {},
  ) {
    this.logger = options.logger ?? silentLogger;
    this.scheduler = options.scheduler ?? asyncScheduler;
  }

  /** The reply subject for a request id. */
  subject(requestId: string): string {
    return `${this.prefix}.${requestId}`;
  }

  /** Routes replies for `requestId` to `handler` until the returned function is called. */
  listen(requestId: string, handler: (msg: Msg) => void): () => void {
    this.ensureSubscribed();
    this.handlers.set(requestId, handler);
    return () => {
      if (this.handlers.get(requestId) === handler) this.handlers.delete(requestId);
    };
  }

  /** Requests waiting for replies now. */
  get pending(): number {
    return this.handlers.size;
  }

  /** Replies that arrived for no waiting request. */
  get unsolicited(): number {
    return this.dropped;
  }

  /** Unsubscribes; waiting requests hear nothing more (their own timeouts end them). */
  close(): void {
    this.closed = true;
    this.handlers.clear();
    this.resubscribe?.unsubscribe();
    if (this.subscription !== undefined && !this.nc.isClosed() && !this.subscription.isClosed()) this.subscription.unsubscribe();
    this.subscription = undefined;
  }

  private ensureSubscribed(): void {
    if (this.subscription !== undefined || this.closed || this.resubscribe !== undefined) return;
    const subject = `${this.prefix}.*`;
    const subscription = this.nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error !== null) {
          this.refused(subscription, error);
          return;
        }
        this.refusals = 0;
        inputCollector.received(msg.data.byteLength);
        const requestId = msg.subject.slice(this.prefix.length + 1);
        const handler = this.handlers.get(requestId);
        if (handler === undefined) {
          this.dropped++;
          this.options.onUnsolicited?.(msg.subject);
          return;
        }
        try {
          handler(msg);
        } catch (failure) {
          this.logger.error({ err: failure, subject: msg.subject }, 'reply handler failed');
        }
      },
    });
    this.subscription = subscription;
  }

  // nats.js closes a subscription the server refused; without a new one no reply would ever arrive.
  private refused(subscription: Subscription, error: Error): void {
    if (this.subscription !== subscription || this.closed) return;
    this.subscription = undefined;
    const waitMs = Math.min((this.options.resubscribeMs ?? 1000) * 2 ** this.refusals, 30_000);
    this.refusals++;
    this.logger.error(
      { err: error, subject: `${this.prefix}.*`, retryInMs: waitMs },
      `the broker refused the reply subscription: ${errorMessage(error)}; subscribing again in ${formatGoDuration(waitMs)}`,
    );
    this.resubscribe = this.scheduler.schedule(() => {
      this.resubscribe = undefined;
      this.ensureSubscribed();
    }, waitMs);
  }
}
