import { createInbox, nuid } from '@nats-io/transport-node';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { jetStreamApi } from './jetStreamApi';
import type { StoredMessage } from './storedMessage';

/** What {@link pullRead} reads and how it asks. */
export interface PullReadOptions {
  stream: string;
  /** The subjects to read (wildcards allowed). */
  subject: string;
  /** Only the last message of each subject (deliver-last-per-subject). */
  last: boolean;
  apiPrefix: string;
  /** Per request. */
  timeoutMs: number;
}

/** A pull asks for at most this many messages; another follows while the consumer has more. */
const BATCH = 1000;

/**
 * The stream sequence, stored time (ms) and messages still pending after this one, from a
 * delivered message's reply subject, in both of its forms:
 * `$JS.ACK.<stream>.<consumer>.<delivered>.<seq>.<dseq>.<ns>.<pending>` and the newer one with a
 * domain and an account hash before the stream (and a token after).
 */
function delivery(reply: string): { seq: number; time: number; pending: number } | undefined {
  const tokens = reply.split('.');
  const at = tokens.length === 9 ? 2 : 4;
  if (tokens.length < at + 7 || tokens[0] !== '$JS' || tokens[1] !== 'ACK') return undefined;
  return {
    seq: Number(tokens[at + 3]),
    time: Math.floor(Number(tokens[at + 5]) / 1e6),
    pending: Number(tokens[at + 6]),
  };
}

/**
 * Reads `subject` from `stream` with one ephemeral pull consumer of JetStream's own API (ack none,
 * in memory), in pulls of up to {@link BATCH} that do not wait, until the consumer has nothing
 * pending; the consumer is deleted after (and lapses by itself should the delete not arrive).
 * Oldest first. What nats.js's ordered consumer does, without the machinery a long-lived
 * consumer needs (heartbeats, resets, an async iterator per message): a command that reads and
 * exits pays for none of it. Throws {@link StreamMissingError} when the stream is not there.
 */
export async function pullRead(nc: NatsConnection, options: PullReadOptions): Promise<StoredMessage[]> {
  const { stream, subject, apiPrefix, timeoutMs } = options;
  // nuid's sequence part: unique in this process, from a random start in each; short, as every
  // message delivered names its consumer in its reply subject, which the client parses a byte at a time.
  const name = `rxfleet_${nuid.next().slice(12)}`;
  const config = {
    name,
    filter_subject: subject,
    deliver_policy: options.last ? 'last_per_subject' : 'all',
    ack_policy: 'none',
    mem_storage: true,
    num_replicas: 1,
    inactive_threshold: Math.max(timeoutMs, 5000) * 1e6,
  };
  const created = await jetStreamApi<{ num_pending: number }>(
    nc,
    `${apiPrefix}.CONSUMER.CREATE.${stream}.${name}.${subject}`,
    { stream_name: stream, config, action: 'create' },
    stream,
    timeoutMs,
  );
  try {
    const out: StoredMessage[] = [];
    let pending = created.num_pending;
    while (pending > 0) {
      const before = out.length;
      pending = await pull(nc, `${apiPrefix}.CONSUMER.MSG.NEXT.${stream}.${name}`, Math.min(BATCH, pending), out, timeoutMs);
      if (out.length === before) break;
    }
    return out;
  } finally {
    await nc.request(`${apiPrefix}.CONSUMER.DELETE.${stream}.${name}`, '', { timeout: timeoutMs }).catch(() => undefined);
  }
}

/** One pull of up to `batch` messages into `out`; resolves to what the consumer still has pending. */
function pull(nc: NatsConnection, next: string, batch: number, out: StoredMessage[], timeoutMs: number): Promise<number> {
  const inbox = createInbox((nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
  return new Promise<number>((resolve, reject) => {
    let received = 0;
    let pending = -1;
    const done = (error?: Error): void => {
      clearTimeout(timer);
      sub.unsubscribe();
      if (error === undefined) resolve(Math.max(pending, 0));
      else reject(error);
    };
    const timer = setTimeout(() => done(new Error(`JetStream: no reply to a pull from ${next} in ${timeoutMs} ms`)), timeoutMs);
    const sub = nc.subscribe(inbox, {
      callback: (error, m: Msg) => {
        if (error !== null) return done(error);
        // A status instead of a message: 404 or 408, the pull is over (nothing more now); any
        // other (409, a limit of the server's) would leave the read short, so it fails.
        const status = m.headers !== undefined && m.data.length === 0 && m.reply === '' ? m.headers.code : 0;
        if (status === 404 || status === 408) return done();
        if (status !== 0) return done(new Error(`JetStream: ${m.headers?.description ?? 'refused'} (${status}) pulling from ${next}`));
        const at = delivery(m.reply ?? '');
        if (at === undefined) return;
        const operation = m.headers?.get('KV-Operation');
        out.push({
          subject: m.subject,
          seq: at.seq,
          time: at.time,
          text: m.string(),
          ...(operation !== undefined && operation !== '' ? { operation } : {}),
        });
        pending = at.pending;
        received++;
        if (pending === 0 || received === batch) done();
      },
    });
    nc.publish(next, JSON.stringify({ batch, no_wait: true }), { reply: inbox });
  });
}
