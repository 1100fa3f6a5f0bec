import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Observable, SchedulerLike, Subscription as RxSubscription, asyncScheduler } from 'rxjs';
import { BadMessages } from '../../lib/choria/badMessages';
import { LifecycleEvent, LifecycleType, PROVISION_MODE_COMPONENT, lifecycleSubject, parseLifecycleEvent } from '../../lib/choria/lifecycle';
import { errorMessage } from '../../lib/choria/errors';
import { LIFECYCLE_MAX_BYTES } from '../../lib/choria/protocol/bounds';
import { Logger, silentLogger } from '../../lib/logger';
import { formatGoDuration } from '../../lib/duration';
import { definedFields } from '../../lib/definedFields';
import { inputCollector } from '../inputCollector';

/** Options for {@link lifecycleEvents}. */
export interface LifecycleListenerOptions {
  /** The event type to listen for; `*` for all. Default `startup`. */
  type?: LifecycleType | '*';
  /** The component (the provisioner's `lifecycle_component`). Default `provision_mode_server`. */
  component?: string;
  /**
   * A NATS queue group: each event goes to one member of the group only (active-active instances,
   * DECISIONS P16). Default none: every listener hears every event, as go-choria's provisioner.
   */
  queue?: string;
  /** Where malformed events are counted and logged. */
  badMessages?: BadMessages;
  /** Larger events are refused unread. Default 64 KiB (a real one is under 1 KiB). */
  maxBytes?: number;
  logger?: Logger;
  /** Times the new subscription after the broker refused one. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /** The first wait before subscribing again after a refusal; it doubles up to 30 s. Default 1 s. */
  resubscribeMs?: number;
}

/**
 * Lifecycle events from `choria.lifecycle.event.<type>.<component>`, in the legacy Choria format or
 * as CloudEvents, as an Observable. A plain subscription by default, so every instance of a daemon
 * hears every event, as go-choria's provisioner does; with `queue`, one member of the group hears
 * each event. An event of another type than asked for is skipped (logged at debug); a malformed one
 * is counted and logged (rate-limited), never an error of the stream. A subscription the broker
 * refuses (a permissions violation) is logged at error and made again after 1 s, 2 s, 4 s ... 30 s:
 * the daemon goes on with discovery meanwhile rather than stopping. Unsubscribing unsubscribes from
 * NATS; the Observable completes if the connection closes.
 *
 * @throws InvalidLifecycleComponentError at once, before any subscription, for a component
 * containing `.`, `>`, `*` or nothing.
 */
export function lifecycleEvents(nc: NatsConnection, options: LifecycleListenerOptions = {}): Observable<LifecycleEvent> {
  const { type = 'startup', component = PROVISION_MODE_COMPONENT, maxBytes = LIFECYCLE_MAX_BYTES } = options;
  const logger = options.logger ?? silentLogger;
  const badMessages = options.badMessages ?? new BadMessages({ logger });
  const subject = lifecycleSubject(type, component);
  const scheduler = options.scheduler ?? asyncScheduler;
  return new Observable<LifecycleEvent>((subscriber) => {
    let subscription: Subscription | undefined;
    let retry: RxSubscription | undefined;
    let refusals = 0;
    const subscribe = (): void => {
      const current = nc.subscribe(subject, {
        ...definedFields({ queue: options.queue }),
        callback: (error, msg) => {
          if (error !== null) {
            if (subscription !== current || subscriber.closed) return;
            // nats.js has closed the refused subscription; a new one is the only way to hear events again.
            subscription = undefined;
            const waitMs = Math.min((options.resubscribeMs ?? 1000) * 2 ** refusals, 30_000);
            refusals++;
            logger.error(
              { err: error, subject, retryInMs: waitMs },
              `the broker refused the lifecycle subscription: ${errorMessage(error)}; nodes are found by discovery only until it is accepted; subscribing again in ${formatGoDuration(waitMs)}`,
            );
            retry = scheduler.schedule(subscribe, waitMs);
            return;
          }
          refusals = 0;
          inputCollector.received(msg.data.byteLength);
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
      subscription = current;
      // Closed otherwise than by a refusal (which has already let go of it): the connection closing
      // or draining. The stream ends with it.
      void current.closed.then(() => {
        if (subscription === current) subscriber.complete();
      });
    };
    subscribe();
    return () => {
      retry?.unsubscribe();
      if (subscription !== undefined && !subscription.isClosed()) subscription.unsubscribe();
      if (options.badMessages === undefined) badMessages.close();
    };
  });
}
