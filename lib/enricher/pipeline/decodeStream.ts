/**
 * The listener's items as the enricher takes them: lifecycle events decoded against the wanted
 * table, connects and disconnects marked in place, everything malformed counted and logged
 * (rate-limited).
 */
import { EMPTY, Observable, OperatorFunction, SchedulerLike, mergeMap, of } from 'rxjs';
import { IncusStreamItem } from '../../incus/api';
import { Logger } from '../../logger';
import { RateLimitedLog } from '../../rateLimitedLog';
import { decodeEvent, isRefusal } from './decodeEvent';
import { EnrichedEvent } from '../model/event';
import { EnricherMetrics } from '../metrics/metrics';
import { WantedTable } from '../model/wanted';

/** Options for {@link decodeStream}. */
export interface DecodeStreamConfig {
  readonly wanted: WantedTable;
  readonly scheduler: SchedulerLike;
  readonly metrics: EnricherMetrics;
  readonly logger: Logger;
}

/**
 * The event stream connected or disconnected, in its place among the events (upstream's
 * `source/connected` and `source/disconnected`): the daemon's state and the chain's warmth are
 * read off it downstream.
 */
export interface ConnectionMark {
  readonly kind: 'connection';
  readonly connected: boolean;
}

const CONNECTED: ConnectionMark = { kind: 'connection', connected: true };
const DISCONNECTED: ConnectionMark = { kind: 'connection', connected: false };

/**
 * The enricher events in the stream: a wanted, well-formed lifecycle event becomes an event of
 * origin `incus`; a connect or disconnect becomes a {@link ConnectionMark}; an action nobody wants is
 * counted as dropped (`unwanted`); a malformed frame, an event without an action, project or name,
 * or with a name no Incus object can have, and an item of an unknown kind are counted as malformed
 * (every one) and logged through a {@link RateLimitedLog} on `scheduler` (per kind of fault, the
 * first five of each minute in full, then one summary line with how many more came), and nothing
 * else is affected. A malformed frame is counted only: the listener (`incusEvents`) logs it, with
 * the same limit. Unsubscribing logs the summaries still pending.
 */
export function decodeStream(config: DecodeStreamConfig): OperatorFunction<IncusStreamItem, EnrichedEvent | ConnectionMark> {
  const { scheduler, logger } = config;
  return (items$) =>
    new Observable<EnrichedEvent | ConnectionMark>((subscriber) => {
      // One per subscription, so its summary timers end with it.
      const badInput = new RateLimitedLog({ logger, scheduler });
      subscriber.add(items$.pipe(decodeItems(config, badInput)).subscribe(subscriber));
      return () => badInput.close();
    });
}

function decodeItems(
  config: DecodeStreamConfig,
  badInput: RateLimitedLog,
): OperatorFunction<IncusStreamItem, EnrichedEvent | ConnectionMark> {
  const { wanted, scheduler, metrics, logger } = config;
  return mergeMap((item): Observable<EnrichedEvent | ConnectionMark> => {
    switch (item.kind) {
      case 'connected':
        return of(CONNECTED);
      case 'disconnected':
        logger.warn({ reason: item.reason }, 'event stream disconnected');
        return of(DISCONNECTED);
      case 'malformed':
        metrics.eventsMalformed.inc();
        return EMPTY;
      case 'event': {
        metrics.eventsReceived.inc();
        const decoded = decodeEvent(item.event, wanted, scheduler.now());
        if (!isRefusal(decoded)) return of(decoded);
        if (decoded.refused === 'unwanted') {
          metrics.dropped('unwanted');
        } else {
          metrics.eventsMalformed.inc();
          badInput.log('malformed_event', { reason: decoded.reason, source: item.event?.source }, 'malformed Incus event ignored');
        }
        return EMPTY;
      }
      default:
        metrics.eventsMalformed.inc();
        badInput.log('unknown_item', { item: (item as { kind?: unknown }).kind }, 'unknown stream item ignored');
        return EMPTY;
    }
  });
}
