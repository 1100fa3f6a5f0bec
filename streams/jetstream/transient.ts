import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { ClosedConnectionError, DrainingConnectionError, PermissionViolationError } from '@nats-io/transport-node';
import { Observable, retry, timer } from 'rxjs';

/**
 * Whether a JetStream request's failure may pass by itself: a timeout, no responders, a server
 * restarting or electing a stream leader, a connection down for a moment. Not: a stream that is
 * not there, a permission the account lacks, a connection closed for good.
 */
export function isTransient(error: unknown): boolean {
  if (error instanceof ClosedConnectionError || error instanceof DrainingConnectionError || error instanceof PermissionViolationError)
    return false;
  if (error instanceof JetStreamApiError) return error.code !== JetStreamApiCodes.StreamNotFound && error.status !== 403;
  return true;
}

/** Whether `error` says the stream is not there. */
export function isStreamNotFound(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;
}

/**
 * Subscribes to `source` again after a transient failure ({@link isTransient}, or any failure
 * `alsoTransient` accepts), waiting 250 ms doubling to 5 s; any other error passes on. `onRetry`
 * hears each one.
 */
export function retryTransient<T>(
  onRetry?: (error: unknown, attempt: number) => void,
  alsoTransient: (error: unknown) => boolean = () => false,
): (source: Observable<T>) => Observable<T> {
  return retry({
    resetOnSuccess: true,
    delay: (error: unknown, attempt: number) => {
      if (!isTransient(error) && !alsoTransient(error)) throw error;
      onRetry?.(error, attempt);
      return timer(Math.min(250 * 2 ** (attempt - 1), 5000));
    },
  });
}

/** `attempt` again after each transient failure (250 ms doubling to 5 s), until it resolves or fails otherwise. */
export async function retryingTransient<T>(attempt: () => Promise<T>, onRetry?: (error: unknown, attempt: number) => void): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isTransient(error)) throw error;
      onRetry?.(error, n);
      await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** (n - 1), 5000)));
    }
  }
}
