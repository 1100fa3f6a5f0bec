import { DeliverPolicy, JetStreamApiError, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/** One message read from a stream: its subject, sequence, when the stream stored it, its body. */
export interface StoredMessage {
  readonly subject: string;
  readonly seq: number;
  /** Wall clock, ms. */
  readonly time: number;
  readonly text: string;
  /** `KV-Operation` of a KV bucket's message: `DEL` or `PURGE` for a deleted key. */
  readonly operation?: string;
}

/** Where a stream is and how to ask it. */
export interface StreamReadOptions {
  stream: string;
  /** The subjects to read (wildcards allowed). */
  subject: string;
  /** Default `$JS.API`. */
  apiPrefix?: string;
  /** Per request. Default 5 s. */
  timeoutMs?: number;
}

/** The stream is not there (`stream not found`): nothing to read, which a reader reports as such. */
export class StreamMissingError extends Error {
  override readonly name = 'StreamMissingError';
  constructor(readonly stream: string) {
    super(`stream ${stream} not found`);
  }
}

function missing(error: unknown, stream: string): unknown {
  return error instanceof JetStreamApiError && /stream not found/i.test(error.message) ? new StreamMissingError(stream) : error;
}

/**
 * The newest message of each subject, oldest first: a deliver-last-per-subject consumer starts at
 * the last of each subject but goes on to deliver what is written while it is read (an instance
 * writes its record every few seconds), which would be a second message for that subject.
 */
export function newestPerSubject(messages: readonly StoredMessage[]): StoredMessage[] {
  const newest = new Map<string, StoredMessage>();
  for (const message of messages) {
    const seen = newest.get(message.subject);
    if (seen !== undefined && seen.seq > message.seq) continue;
    newest.delete(message.subject);
    newest.set(message.subject, message);
  }
  return [...newest.values()];
}

/**
 * Reads every stored message on `subject`, or only the last of each subject (`last: true`), with
 * an ordered consumer (JetStream's own deliver-last-per-subject on nats-server 2.9 and later),
 * oldest first. Ends when the consumer has nothing pending; the consumer is deleted after. With
 * `last`, a subject written to during the read still gives one message, its newest.
 * Throws {@link StreamMissingError} when the stream is not there.
 */
export async function readStream(nc: NatsConnection, options: StreamReadOptions & { last?: boolean }): Promise<StoredMessage[]> {
  const { stream, subject, apiPrefix = '$JS.API', timeoutMs = 5000 } = options;
  const js = jetstream(nc, { apiPrefix, timeout: timeoutMs });
  let consumer;
  try {
    consumer = await js.consumers.get(stream, {
      filter_subjects: subject,
      deliver_policy: options.last === true ? DeliverPolicy.LastPerSubject : DeliverPolicy.All,
    });
  } catch (error) {
    throw missing(error, stream);
  }
  try {
    const info = await consumer.info(true);
    let pending = info.num_pending;
    const out: StoredMessage[] = [];
    if (pending === 0) return out;
    const messages = await consumer.consume({ max_messages: Math.min(1000, pending), expires: timeoutMs });
    const decoder = new TextDecoder();
    for await (const m of messages) {
      const operation = m.headers?.get('KV-Operation');
      out.push({
        subject: m.subject,
        seq: m.seq,
        time: Math.floor(m.info.timestampNanos / 1e6),
        text: decoder.decode(m.data),
        ...(operation !== undefined && operation !== '' ? { operation } : {}),
      });
      pending = m.info.pending;
      if (pending === 0) break;
    }
    await messages.close();
    return options.last === true ? newestPerSubject(out) : out;
  } finally {
    await consumer.delete().catch(() => undefined);
  }
}

/** A KV bucket's live keys, as its stream holds them: the last value of each, deletes left out. */
export interface KvEntry {
  readonly key: string;
  readonly value: string;
  readonly revision: number;
  /** When it was written, wall clock ms. */
  readonly time: number;
}

/**
 * Every live key of a KV bucket with its value and when it was written, read from its stream
 * (`KV_<bucket>`) the way `nats kv ls` does, and the bucket's max age (ms, 0 for none). Throws
 * {@link StreamMissingError} when the bucket is not there.
 */
export async function readBucket(
  nc: NatsConnection,
  options: { bucket: string; apiPrefix?: string; timeoutMs?: number },
): Promise<{ entries: KvEntry[]; ttlMs: number }> {
  const { bucket, apiPrefix = '$JS.API', timeoutMs = 5000 } = options;
  const stream = `KV_${bucket}`;
  const jsm = await jetstreamManager(nc, { apiPrefix, checkAPI: false, timeout: timeoutMs });
  let ttlMs: number;
  try {
    ttlMs = (await jsm.streams.info(stream)).config.max_age / 1e6;
  } catch (error) {
    throw missing(error, stream);
  }
  const prefix = `$KV.${bucket}.`;
  const messages = await readStream(nc, { stream, subject: `${prefix}>`, apiPrefix, timeoutMs, last: true });
  const entries = messages
    .filter((m) => m.operation === undefined)
    .map((m) => ({ key: m.subject.slice(prefix.length), value: m.text, revision: m.seq, time: m.time }));
  return { entries, ttlMs };
}

/** A message's body as JSON, or undefined when it is not JSON (a reader skips what it cannot read). */
export function jsonOf(message: StoredMessage): unknown {
  try {
    return JSON.parse(message.text);
  } catch {
    return undefined;
  }
}
