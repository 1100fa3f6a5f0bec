import type { NatsConnection } from '@nats-io/transport-node';
import { Observable } from 'rxjs';
import { EventPayload } from '../../lib/enricher/output/payload';
import { decodeEventPayload } from '../../lib/enricher/output/payloadDecoder';

/** Options for {@link enrichedInstanceEvents}. */
export interface EnrichedEventFeedOptions {
  /** The enricher's subject prefix (`outputs.nats.subject_prefix`, `incus.events` by default). */
  subjectPrefix: string;
  /** Told of each message that is not an enriched event (it is skipped); the reason never carries its content. */
  onMalformed?: (subject: string, reason: string) => void;
  /**
   * Told when the subscription itself fails (the account may not subscribe to the subjects): the
   * Observable then completes, so a feed the broker refuses never ends the daemon it feeds.
   */
  onError?: (error: Error) => void;
}

/** The subject every instance event of every project is published on, under `prefix`. */
export function instanceEventSubjects(prefix: string): string {
  return `${prefix}.*.instance.>`;
}

/**
 * The instance events `rxfleet enrich` publishes (`<prefix>.<project>.instance.<action>.<name>`),
 * decoded, as an Observable: a plain subscription, so every subscriber hears every event (core
 * NATS: at most once, in the publisher's order). A message that is not an enriched event is
 * reported to `onMalformed` and skipped, never an error of the stream; a subscription the broker
 * refuses is reported to `onError` and completes it. Unsubscribing unsubscribes from NATS; the
 * Observable completes if the connection closes.
 */
export function enrichedInstanceEvents(nc: NatsConnection, options: EnrichedEventFeedOptions): Observable<EventPayload> {
  const subject = instanceEventSubjects(options.subjectPrefix);
  return new Observable<EventPayload>((subscriber) => {
    const subscription = nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error !== null) {
          options.onError?.(error);
          subscriber.complete();
          return;
        }
        const decoded = decodeEventPayload(msg.data);
        if (decoded.ok) subscriber.next(decoded.value);
        else options.onMalformed?.(msg.subject, decoded.reason);
      },
    });
    void subscription.closed.then(() => subscriber.complete());
    return () => {
      if (!subscription.isClosed()) subscription.unsubscribe();
    };
  });
}
