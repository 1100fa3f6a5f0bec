import type { NatsConnection } from '@nats-io/transport-node';
import type { StoredMessage } from './storedMessage';
import { jetStreamApi } from './jetStreamApi';
import { pullRead } from './pullRead';

export { StoredMessage, StreamMissingError } from './storedMessage';

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
 * Reads every stored message on `subject`, or only the last of each subject (`last: true`, which
 * JetStream's deliver-last-per-subject gives on nats-server 2.9 and later), oldest first, with
 * one short-lived consumer ({@link pullRead}). With `last`, a subject written to during the read
 * still gives one message, its newest. Throws {@link StreamMissingError} when the stream is not there.
 */
export async function readStream(nc: NatsConnection, options: StreamReadOptions & { last?: boolean }): Promise<StoredMessage[]> {
  const { stream, subject, apiPrefix = '$JS.API', timeoutMs = 5000 } = options;
  const last = options.last === true;
  const messages = await pullRead(nc, { stream, subject, apiPrefix, timeoutMs, last });
  return last ? newestPerSubject(messages) : messages;
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
  const prefix = `$KV.${bucket}.`;
  // Asked together: an operator waits for both.
  const [info, messages] = await Promise.all([
    jetStreamApi<{ config: { max_age: number } }>(nc, `${apiPrefix}.STREAM.INFO.${stream}`, undefined, stream, timeoutMs),
    readStream(nc, { stream, subject: `${prefix}>`, apiPrefix, timeoutMs, last: true }),
  ]);
  const ttlMs = info.config.max_age / 1e6;
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
