/**
 * Reading a JetStream stream with an ordered consumer (no state on the server beyond the reader's
 * life, recreated by nats.js after a reconnect): to its end once, or for ever as an Observable.
 */
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerMessages, JsMsg, OrderedConsumerOptions } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Observable, defer, tap } from 'rxjs';
import { retryTransient } from './transient';

export { DeliverPolicy };
export type { JsMsg, OrderedConsumerOptions };

/**
 * How long one pull waits on the server. nats.js waits this long between its checks that the
 * consumer is still there after a reconnect (a restarted server has forgotten it), and sends
 * heartbeats every half of it: its default, 30 s, left a follower half a minute behind a restart.
 */
const CONSUME_EXPIRES_MS = 5000;

/** How many messages one fetch asks for while reading to the end. */
const BATCH = 1000;

/**
 * Reads `stream` from where `options` start it until the reader has caught up with the stream
 * (what it holds now, written meanwhile included), handing each message to `onMessage` in stream
 * order; resolves then. `onMessage` throwing rejects it.
 *
 * Caught up means a message at the stream's last sequence (asked again whenever one is reached,
 * so a write made meanwhile is read too), or, for a consumer from a sequence or a time, nothing
 * pending after a message, or a fetch that finds nothing. The `pending` of a last-per-subject
 * consumer is not used: nats-server 2.9 counts only the subjects' last messages not yet sent, so
 * with the bucket written meanwhile it said 0 with keys still to come, and a snapshot lacked them.
 */
export async function readToEnd(
  nc: NatsConnection,
  stream: string,
  options: Partial<OrderedConsumerOptions>,
  onMessage: (message: JsMsg) => void,
): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const lastSeq = async (): Promise<number> => {
    const { state } = await jsm.streams.info(stream);
    return state.messages === 0 ? 0 : state.last_seq;
  };
  let end = await lastSeq();
  if (end === 0) return;
  const trustPending = options.deliver_policy !== DeliverPolicy.LastPerSubject;
  const consumer = await jetstream(nc).consumers.get(stream, options);
  for (;;) {
    let got = 0;
    const batch = await consumer.fetch({ max_messages: BATCH, expires: 1000 });
    for await (const message of batch) {
      got++;
      onMessage(message);
      if (trustPending && message.info.pending === 0) return;
      if (message.seq >= end) {
        end = await lastSeq();
        if (message.seq >= end) return;
      }
    }
    // A whole fetch found nothing: the rest of the stream is not this reader's (filtered, removed).
    if (got === 0) return;
  }
}

/**
 * `stream`'s messages from where `options` start it, for ever, as an Observable: one ordered
 * consumer per subscription, delivered in stream order, stopped on unsubscribe. nats.js recreates
 * the consumer from the last message delivered after a reconnect or missed heartbeats, so a server
 * restart loses and repeats nothing; a consumer that cannot be made for a moment (the server
 * restarting) is asked for again. Errors when the stream is not there or may not be read.
 */
export function streamMessages(nc: NatsConnection, stream: string, options: Partial<OrderedConsumerOptions>): Observable<JsMsg> {
  return defer(() => {
    // Where this subscription is: a consumer made again goes on from the next message.
    let lastSeq = 0;
    return defer(() =>
      consumed(
        nc,
        stream,
        lastSeq === 0 ? options : { ...options, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: lastSeq + 1 },
      ),
    ).pipe(
      tap((message) => (lastSeq = message.seq)),
      retryTransient(),
    );
  });
}

function consumed(nc: NatsConnection, stream: string, options: Partial<OrderedConsumerOptions>): Observable<JsMsg> {
  return new Observable<JsMsg>((subscriber) => {
    let messages: ConsumerMessages | undefined;
    let stopped = false;
    jetstream(nc)
      .consumers.get(stream, options)
      .then((consumer) => consumer.consume({ callback: (message) => subscriber.next(message), expires: CONSUME_EXPIRES_MS }))
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
