import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { Logger, silentLogger } from '../../lib/logger';

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
 *   caller id) is dropped and counted in `unsolicited`.
 * - A handler that throws is logged; it never breaks the subscription.
 */
export class ReplyInbox {
  private readonly handlers = new Map<string, (msg: Msg) => void>();
  private subscription: Subscription | undefined;
  private dropped = 0;

  constructor(
    private readonly nc: NatsConnection,
    /** `<collective>.reply.<md5(caller)>`. */
    readonly prefix: string,
    private readonly logger: Logger = silentLogger,
  ) {}

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
    this.handlers.clear();
    if (this.subscription !== undefined && !this.nc.isClosed()) this.subscription.unsubscribe();
    this.subscription = undefined;
  }

  private ensureSubscribed(): void {
    if (this.subscription !== undefined) return;
    this.subscription = this.nc.subscribe(`${this.prefix}.*`, {
      callback: (error, msg) => {
        if (error !== null) {
          this.logger.error({ err: error, subject: `${this.prefix}.*` }, 'reply subscription failed');
          return;
        }
        const requestId = msg.subject.slice(this.prefix.length + 1);
        const handler = this.handlers.get(requestId);
        if (handler === undefined) {
          this.dropped++;
          this.logger.debug({ subject: msg.subject }, 'reply for no waiting request');
          return;
        }
        try {
          handler(msg);
        } catch (failure) {
          this.logger.error({ err: failure, subject: msg.subject }, 'reply handler failed');
        }
      },
    });
  }
}
