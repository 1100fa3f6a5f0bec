/**
 * Reading a JetStream stream with an ordered consumer (no state on the server beyond the reader's
 * life, recreated by nats.js after a reconnect): to its end once, or for ever as an Observable.
 */
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import type { ConsumerMessages, JsMsg, OrderedConsumerOptions } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Observable } from 'rxjs';

export { DeliverPolicy };
export type { JsMsg, OrderedConsumerOptions };

/** How many messages one fetch asks for while reading to the end. */
const BATCH = 1000;

/**
 * Reads `stream` from where `options` start it until the reader has caught up (the server says
 * nothing is pending), handing each message to `onMessage` in stream order; resolves then. A
 * stream with nothing to deliver resolves at once. `onMessage` throwing rejects it.
 */
export async function readToEnd(
  nc: NatsConnection,
  stream: string,
  options: Partial<OrderedConsumerOptions>,
  onMessage: (message: JsMsg) => void,
): Promise<void> {
  const consumer = await jetstream(nc).consumers.get(stream, options);
  if ((await consumer.info(true)).num_pending === 0) return;
  for (;;) {
    let got = 0;
    let caughtUp = false;
    const batch = await consumer.fetch({ max_messages: BATCH, expires: 2000 });
    for await (const message of batch) {
      got++;
      onMessage(message);
      if (message.info.pending === 0) {
        caughtUp = true;
        break;
      }
    }
    // Nothing came for a whole fetch: what was pending has gone (expired, removed) meanwhile.
    if (caughtUp || got === 0) return;
  }
}

/**
 * `stream`'s messages from where `options` start it, for ever, as an Observable: one ordered
 * consumer per subscription, delivered in stream order, stopped on unsubscribe. nats.js recreates
 * the consumer from the last message delivered after a reconnect or missed heartbeats, so a server
 * restart loses and repeats nothing. Errors when the consumer cannot be made (no such stream).
 */
export function streamMessages(nc: NatsConnection, stream: string, options: Partial<OrderedConsumerOptions>): Observable<JsMsg> {
  return new Observable<JsMsg>((subscriber) => {
    let messages: ConsumerMessages | undefined;
    let stopped = false;
    jetstream(nc)
      .consumers.get(stream, options)
      .then((consumer) => consumer.consume({ callback: (message) => subscriber.next(message) }))
      .then(
        (consuming) => {
          messages = consuming;
          if (stopped) void consuming.close();
          else
            void consuming.closed().then((error) => {
              if (error) subscriber.error(error);
              else subscriber.complete();
            });
        },
        (error: unknown) => subscriber.error(error),
      );
    return () => {
      stopped = true;
      void messages?.close();
    };
  });
}
