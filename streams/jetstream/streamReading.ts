/**
 * Reading a JetStream stream with an ordered consumer (no state on the server beyond the reader's
 * life, recreated by nats.js after a reconnect): to its end once, or for ever as an Observable.
 */
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { ConsumerMessages, JsMsg, OrderedConsumerOptions } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Observable, defer, tap } from 'rxjs';
import { isStreamNotFound, retryTransient } from './transient';

export { DeliverPolicy };
export type { JsMsg, OrderedConsumerOptions };

/**
 * How long one pull waits on the server. nats.js waits this long between its checks that the
 * consumer is still there after a reconnect (a restarted server has forgotten it), and sends
 * heartbeats every half of it: its default, 30 s, left a follower half a minute behind a restart.
 */
const CONSUME_EXPIRES_MS = 5000;

/**
 * The options as a new object without a name: nats.js writes the ordered consumer's name prefix
 * into the options it is given, so options used twice named a second consumer as the first, and
 * the server refused it ("start sequence can not be updated") while the first still existed.
 */
function fresh(options: Partial<OrderedConsumerOptions>): Partial<OrderedConsumerOptions> {
  const { name_prefix: _unused, ...rest } = options;
  return rest;
}

/** How many heartbeats a following consumer may miss in a row before it is made again. */
const MISSED_HEARTBEATS = 4;

/**
 * An ordered consumer that has stopped delivering while messages wait: on a cluster, one placed on
 * the server that led the stream and died; nats.js asks after it for ever without making another.
 * It is transient: the reader makes a new consumer from where it was.
 */
export class ConsumerStalledError extends Error {
  constructor(stream: string) {
    super(`the consumer of ${stream} stopped delivering: making another`);
    this.name = 'ConsumerStalledError';
  }
}

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
  const consumer = await jetstream(nc).consumers.get(stream, fresh(options));
  let delivered = 0;
  for (;;) {
    let got = 0;
    const batch = await consumer.fetch({ max_messages: BATCH, expires: 1000 });
    for await (const message of batch) {
      got++;
      delivered = message.seq;
      onMessage(message);
      if (trustPending && message.info.pending === 0) return;
      if (message.seq >= end) {
        end = await lastSeq();
        if (message.seq >= end) return;
      }
    }
    if (got > 0) continue;
    // A whole fetch found nothing: done if nothing is left for this reader (the rest filtered out
    // or removed); otherwise the consumer is stuck (its server gone with a stream leader).
    end = await lastSeq();
    if (delivered >= end || (trustPending && (await consumer.info()).num_pending === 0)) return;
    throw new ConsumerStalledError(stream);
  }
}

/**
 * `stream`'s messages from where `options` start it, for ever, as an Observable: one ordered
 * consumer per subscription, delivered in stream order, stopped on unsubscribe. nats.js recreates
 * the consumer from the last message delivered after a reconnect, so a server restart loses and
 * repeats nothing; a consumer that cannot be made for a moment (the server restarting) is asked
 * for again, and one that stops delivering ({@link ConsumerStalledError}: missed heartbeats, after
 * its server died with the stream's leader) is made again from the next message. Errors when the
 * stream is not there or may not be read.
 */
export function streamMessages(nc: NatsConnection, stream: string, options: Partial<OrderedConsumerOptions>): Observable<JsMsg> {
  return defer(() => {
    // Where this subscription is: a consumer made again goes on from the next message.
    let lastSeq = 0;
    let established = false;
    return defer(() =>
      consumed(
        nc,
        stream,
        lastSeq === 0 ? options : { ...options, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: lastSeq + 1 },
        () => (established = true),
      ),
    ).pipe(
      tap((message) => (lastSeq = message.seq)),
      // A stream that was there and is missing is a server still loading it after a restart.
      retryTransient(undefined, (error) => established && isStreamNotFound(error)),
    );
  });
}

function consumed(nc: NatsConnection, stream: string, options: Partial<OrderedConsumerOptions>, onMade: () => void): Observable<JsMsg> {
  return new Observable<JsMsg>((subscriber) => {
    let messages: ConsumerMessages | undefined;
    let stopped = false;
    jetstream(nc)
      .consumers.get(stream, fresh(options))
      .then((consumer) => consumer.consume({ callback: (message) => subscriber.next(message), expires: CONSUME_EXPIRES_MS }))
      .then(
        (consuming) => {
          onMade();
          messages = consuming;
          void (async () => {
            for await (const status of consuming.status())
              if (status.type === 'heartbeats_missed' && status.count >= MISSED_HEARTBEATS) {
                subscriber.error(new ConsumerStalledError(stream));
                return;
              }
          })().catch(() => undefined);
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
