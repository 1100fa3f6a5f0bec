import type { NatsConnection } from '@nats-io/transport-node';
import { StreamMissingError } from './storedMessage';

/** JetStream's error body, on any API reply that failed. */
interface ApiError {
  code: number;
  err_code?: number;
  description?: string;
}

/** Stream not found (JSStreamNotFoundErr). */
const STREAM_NOT_FOUND = 10059;

/**
 * One request to JetStream's API about `stream` (the subject has the account's API prefix), its
 * reply's JSON; throws {@link StreamMissingError} when the stream is not there and an error with
 * JetStream's own description for any other refusal. No client library beyond the connection:
 * a command that asks once and exits loads none.
 */
export async function jetStreamApi<T>(nc: NatsConnection, subject: string, body: unknown, stream: string, timeoutMs: number): Promise<T> {
  const payload = body === undefined ? '' : JSON.stringify(body);
  const reply = (await nc.request(subject, payload, { timeout: timeoutMs })).json<T & { error?: ApiError }>();
  const error = reply.error;
  if (error === undefined) return reply;
  if (error.err_code === STREAM_NOT_FOUND) throw new StreamMissingError(stream);
  throw new Error(`JetStream: ${error.description ?? `error ${error.code}`} (${stream})`);
}
