import { Counter, Registry } from 'prom-client';
import { SchedulerLike } from 'rxjs';
import { Logger, silentLogger } from '../logger';
import { RateLimitedLog } from '../rateLimitedLog';
import { ProtocolErrorReason } from './errors';

/** The metric every bad inbound message increments, labelled by where it came from and why it was refused. */
export const BAD_MESSAGES_METRIC = 'rxfleet_bad_messages_total';

/**
 * Where a bad message arrived: a reply to a direct request, a reply to a broadcast (discovery), a
 * lifecycle event, or (in a simulated server) a request.
 */
export type BadMessageSource = 'reply' | 'broadcast_reply' | 'lifecycle' | 'request';

/**
 * Why a message was refused: it does not decode (a {@link ProtocolErrorReason}), or it is a reply
 * nobody asked for: `unsolicited` (its request id has no request waiting: late, after a timeout or
 * an outage, or for another process with the same caller id) or `stranger` (it comes from another
 * node than the one asked, DECISIONS P18).
 */
export type RefusalReason = ProtocolErrorReason | UnexpectedReplyReason;

/** The two ways a well-formed reply can still be nobody's. */
export type UnexpectedReplyReason = 'unsolicited' | 'stranger';

/** What was wrong with one message: a `ProtocolError` is one. */
export interface Refusal {
  readonly reason: RefusalReason;
  /** The layer that refused it (`transport`, `reply`, `agent`, `inbox`, ...). */
  readonly layer: string;
  /** One line, never the message body. */
  readonly message: string;
}

/** Whether a refusal is a well-formed reply nobody asked for, rather than a message that does not decode. */
export function isUnexpectedReply(reason: RefusalReason): reason is UnexpectedReplyReason {
  return reason === 'unsolicited' || reason === 'stranger';
}

/** Options for {@link BadMessages}. */
export interface BadMessagesOptions {
  logger?: Logger;
  /** The metric is registered here (once per registry) when given. */
  registry?: Registry;
  /** Told about every refused message too (a daemon maps it onto its own metric). */
  onReport?: (source: BadMessageSource, refusal: Refusal, subject: string) => void;
  /** Lines logged in full per source and interval before a summary takes over. Default 5. */
  logBurst?: number;
  /** The log's interval, ms. Default 60 s. */
  logIntervalMs?: number;
  /** The log's clock and summary timer. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/**
 * The one place a bad inbound message goes: it is counted (in memory, and in the registry's
 * `rxfleet_bad_messages_total{source,reason}` when a registry is given, and through `onReport`)
 * and logged without the body, through a {@link RateLimitedLog} per source: the first few of an
 * interval in full (subject, source, reason, layer), then one summary line, so a flood of junk
 * costs a few lines a minute and every message is still counted. Malformed messages are logged at
 * warn; well-formed replies nobody waits for (late ones are normal after a timeout or an outage)
 * at info. Nothing is thrown, so a stream that met it carries on.
 * The message body is never logged: it may carry a token or a key.
 */
export class BadMessages {
  private readonly counter: Counter<'source' | 'reason'> | undefined;
  private readonly counts = new Map<string, number>();
  private all = 0;
  private readonly onReport: BadMessagesOptions['onReport'];
  private readonly malformedLog: RateLimitedLog;
  private readonly unexpectedLog: RateLimitedLog;

  constructor(options: BadMessagesOptions = {}) {
    const logger = options.logger ?? silentLogger;
    const limits = { burst: options.logBurst, intervalMs: options.logIntervalMs, scheduler: options.scheduler };
    this.malformedLog = new RateLimitedLog({ logger, level: 'warn', ...defined(limits) });
    this.unexpectedLog = new RateLimitedLog({ logger, level: 'info', ...defined(limits) });
    this.onReport = options.onReport;
    const registry = options.registry;
    if (registry !== undefined) {
      const existing = registry.getSingleMetric(BAD_MESSAGES_METRIC) as Counter<'source' | 'reason'> | undefined;
      this.counter =
        existing ??
        new Counter({
          name: BAD_MESSAGES_METRIC,
          help: 'Inbound NATS messages refused as malformed or unexpected, by source and reason',
          labelNames: ['source', 'reason'],
          registers: [registry],
        });
    }
  }

  /** Counts and logs (within the log's limit) one refused message. */
  report(source: BadMessageSource, refusal: Refusal, subject: string): void {
    this.all++;
    const key = `${source}:${refusal.reason}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    this.counter?.inc({ source, reason: refusal.reason });
    this.onReport?.(source, refusal, subject);
    const fields = { source, subject, reason: refusal.reason, layer: refusal.layer };
    if (isUnexpectedReply(refusal.reason))
      this.unexpectedLog.log(`${source}:${refusal.reason}`, fields, `ignored a ${source}: ${refusal.message}`);
    else this.malformedLog.log(source, fields, `refused a malformed ${source}: ${refusal.message}`);
  }

  /** How many were refused in all, or from one source, or for one reason from one source. */
  count(source?: BadMessageSource, reason?: RefusalReason): number {
    if (source === undefined) return this.all;
    if (reason !== undefined) return this.counts.get(`${source}:${reason}`) ?? 0;
    let n = 0;
    for (const [key, value] of this.counts) if (key.startsWith(`${source}:`)) n += value;
    return n;
  }

  /** Logs the pending summaries and stops the log's timers (a daemon's stop). Counting goes on. */
  close(): void {
    this.malformedLog.close();
    this.unexpectedLog.close();
  }
}

function defined<T extends Record<string, unknown>>(object: T): Partial<T> {
  return Object.fromEntries(Object.entries(object).filter(([, v]) => v !== undefined)) as Partial<T>;
}
