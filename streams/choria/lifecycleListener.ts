import type { NatsConnection } from '@nats-io/transport-node';
import { Observable } from 'rxjs';
import { BadMessages } from '../../lib/choria/badMessages';
import { LifecycleEvent, LifecycleType, PROVISION_MODE_COMPONENT, lifecycleSubject, parseLifecycleEvent } from '../../lib/choria/lifecycle';
import { DEFAULT_MAX_BYTES } from '../../lib/choria/protocol/codec';
import { Logger, silentLogger } from '../../lib/logger';

/** Options for {@link lifecycleEvents}. */
export interface LifecycleListenerOptions {
  /** The event type to listen for; `*` for all. Default `startup`. */
  type?: LifecycleType | '*';
  /** The component (the provisioner's `lifecycle_component`). Default `provision_mode_server`. */
  component?: string;
  /** Where malformed events are counted and logged. */
  badMessages?: BadMessages;
  maxBytes?: number;
  logger?: Logger;
}

/**
 * Lifecycle events from `choria.lifecycle.event.<type>.<component>`, in the legacy Choria format or
 * as CloudEvents, as an Observable. A plain subscription (no queue group), so every instance of a
 * daemon hears every event, as go-choria's provisioner does. An event of another type than asked for
 * is skipped (logged at debug); a malformed one is counted and logged once, never an error of the
 * stream. Unsubscribing unsubscribes from NATS; the Observable completes if the connection closes.
 *
 * @throws InvalidLifecycleComponentError at once, before any subscription, for a component
 * containing `.`, `>`, `*` or nothing.
 */
export function lifecycleEvents(nc: NatsConnection, options: LifecycleListenerOptions = {}): Observable<LifecycleEvent> {
  const { type = 'startup', component = PROVISION_MODE_COMPONENT, maxBytes = DEFAULT_MAX_BYTES } = options;
  const logger = options.logger ?? silentLogger;
  const badMessages = options.badMessages ?? new BadMessages({ logger });
  const subject = lifecycleSubject(type, component);
  return new Observable<LifecycleEvent>((subscriber) => {
    const subscription = nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error !== null) {
          subscriber.error(error);
          return;
        }
        const parsed = parseLifecycleEvent(msg.data, { maxBytes });
        if (!parsed.ok) {
          badMessages.report('lifecycle', parsed.error, msg.subject);
          return;
        }
        if (type !== '*' && parsed.value.type !== type) {
          logger.debug({ subject: msg.subject, type: parsed.value.type }, 'skipping a lifecycle event of another type');
          return;
        }
        subscriber.next(parsed.value);
      },
    });
    void subscription.closed.then(() => subscriber.complete());
    return () => {
      if (!subscription.isClosed()) subscription.unsubscribe();
      if (options.badMessages === undefined) badMessages.close();
    };
  });
}
