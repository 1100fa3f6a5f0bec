import { Msg, NoRespondersError, RequestError, Subscription, SubscriptionOptions, TimeoutError } from '@nats-io/transport-node';

/** What one in-memory request needs of its connection. */
export interface MemoryRequest {
  /** The subject asked. */
  subject: string;
  /** The unique subject the reply comes back on. */
  inbox: string;
  timeoutMs: number;
  subscribe(subject: string, options: SubscriptionOptions): Subscription;
  /** Publishes the request with `inbox` as its reply subject; may throw (a closed connection, a bad subject). */
  send(inbox: string): void;
}

/**
 * Request/reply as nats.js does it: resolves with the first message on the inbox; rejects with a
 * `TimeoutError` after `timeoutMs`, with a `RequestError` caused by `NoRespondersError` when the
 * server says nobody listens (an empty message with status 503), or with what `send` threw. The
 * inbox subscription ends in every case.
 */
export function awaitReply(request: MemoryRequest): Promise<Msg> {
  const { subject, inbox } = request;
  return new Promise<Msg>((resolve, reject) => {
    // Replies are delivered asynchronously, so the timer below is always set before this runs.
    const sub = request.subscribe(inbox, {
      max: 1,
      callback: (_, msg) => {
        clearTimeout(timer);
        if (msg.data.length === 0 && msg.headers?.code === 503)
          reject(new RequestError(`no responders: '${subject}'`, { cause: new NoRespondersError(subject) }));
        else resolve(msg);
      },
    });
    const timer = setTimeout(() => {
      sub.unsubscribe();
      reject(new TimeoutError());
    }, request.timeoutMs);
    try {
      request.send(inbox);
    } catch (error) {
      clearTimeout(timer);
      sub.unsubscribe();
      reject(error as Error);
    }
  });
}
