import { Counter, Registry } from 'prom-client';
import { Logger, silentLogger } from '../logger';
import { ProtocolError, ProtocolErrorReason } from './errors';

/** The metric every bad inbound message increments, labelled by where it came from and why it was refused. */
export const BAD_MESSAGES_METRIC = 'rxfleet_bad_messages_total';

/**
 * Where a bad message arrived: a reply to a direct request, a reply to a broadcast (discovery), a
 * lifecycle event, or (in a simulated server) a request.
 */
export type BadMessageSource = 'reply' | 'broadcast_reply' | 'lifecycle' | 'request';

/** Options for {@link BadMessages}. */
export interface BadMessagesOptions {
  logger?: Logger;
  /** The metric is registered here (once per registry) when given. */
  registry?: Registry;
  /** Told about every refused message too (a daemon maps it onto its own metric). */
  onReport?: (source: BadMessageSource, error: ProtocolError, subject: string) => void;
}

/**
 * The one place a bad inbound message goes: it is counted (in memory, and in the registry's
 * `rxfleet_bad_messages_total{source,reason}` when a registry is given) and logged once, at warn,
 * with the subject and the reason; nothing is thrown, so a stream that met it carries on.
 * The message body is never logged: it may carry a token or a key.
 */
export class BadMessages {
  private readonly logger: Logger;
  private readonly counter: Counter<'source' | 'reason'> | undefined;
  private readonly counts = new Map<string, number>();
  private all = 0;
  private readonly onReport: BadMessagesOptions['onReport'];

  constructor(options: BadMessagesOptions = {}) {
    this.logger = options.logger ?? silentLogger;
    this.onReport = options.onReport;
    const registry = options.registry;
    if (registry !== undefined) {
      const existing = registry.getSingleMetric(BAD_MESSAGES_METRIC) as Counter<'source' | 'reason'> | undefined;
      this.counter =
        existing ??
        new Counter({
          name: BAD_MESSAGES_METRIC,
          help: 'Inbound NATS messages refused as malformed, by source and reason',
          labelNames: ['source', 'reason'],
          registers: [registry],
        });
    }
  }

  /** Counts and logs one refused message. */
  report(source: BadMessageSource, error: ProtocolError, subject: string): void {
    this.all++;
    const key = `${source}:${error.reason}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    this.counter?.inc({ source, reason: error.reason });
    this.onReport?.(source, error, subject);
    this.logger.warn({ source, subject, reason: error.reason, layer: error.layer }, `refused a malformed ${source}: ${error.message}`);
  }

  /** How many were refused in all, or from one source, or for one reason from one source. */
  count(source?: BadMessageSource, reason?: ProtocolErrorReason): number {
    if (source === undefined) return this.all;
    if (reason !== undefined) return this.counts.get(`${source}:${reason}`) ?? 0;
    let n = 0;
    for (const [key, value] of this.counts) if (key.startsWith(`${source}:`)) n += value;
    return n;
  }
}
