import { Observable, ObservableInput, SchedulerLike, asyncScheduler, defer, from, map, retry, take, throwIfEmpty, timer } from 'rxjs';

/**
 * What active-active provisioning needs of a JetStream KV bucket (DECISIONS P16), and nothing
 * more. The bucket's max age is a claim's lifetime: a claim not written again within it lapses.
 * Each operation is an Observable factory, so the claim stage runs in virtual time against a fake.
 */
export interface ClaimStore {
  /** The bucket's max age, ms (0: none, which a claims bucket must not have). */
  ttl(): ObservableInput<number>;
  /** Writes `value` if the key is free (never written, deleted, or aged out); emits the revision; errors {@link ClaimHeldError} if it is held. */
  create(key: string, value: string): ObservableInput<number>;
  /** Writes `value` if nobody wrote since `revision`; emits the new revision; errors {@link ClaimHeldError} otherwise. */
  update(key: string, value: string, revision: number): ObservableInput<number>;
  /**
   * Writes `value` over the key when its last value is `value` (this owner's own write: a create
   * that timed out and was written all the same, while a stream leader was being elected), from the
   * revision read, which the write must still find; emits the new revision; errors
   * {@link ClaimHeldError} when anything else holds the key, or nothing does. Nothing is decided by
   * the read: only an acknowledged write wins. Optional: without it such a node waits a lifetime.
   */
  adopt?(key: string, value: string): ObservableInput<number>;
  /**
   * Deletes the key if nobody wrote since `revision`; a key somebody else holds now is left alone.
   * Errors {@link ClaimStoreClosedError} once the store's connection is closed or closing.
   */
  release(key: string, revision: number): ObservableInput<unknown>;
}

/** The key is held by someone else (JetStream's `wrong last sequence`). */
export class ClaimHeldError extends Error {
  override readonly name = 'ClaimHeldError';
  constructor(key: string, detail = 'held by another provisioner') {
    super(`${key}: ${detail}`);
  }
}

/** The store's connection is closed or closing (a daemon stopping): nothing more can be written, so nothing is tried again. */
export class ClaimStoreClosedError extends Error {
  override readonly name = 'ClaimStoreClosedError';
  constructor(key: string) {
    super(`${key}: the claims bucket's connection is closed`);
  }
}

export { claimKey } from './claimKey';

/** Rotates a discovery round's identities to start at `offset`, so instances start on different nodes. */
export function rotateRound<T>(items: readonly T[], offset: number): T[] {
  if (items.length === 0) return [];
  const at = ((Math.floor(offset) % items.length) + items.length) % items.length;
  return [...items.slice(at), ...items.slice(0, at)];
}

/** The first value of a store operation; completing without one is an error (for the claim stage). */
export function once<T>(operation: () => ObservableInput<T>): Observable<T> {
  return defer(() => from(operation())).pipe(
    take(1),
    throwIfEmpty(() => new Error('the claims bucket answered nothing')),
  );
}

/** Options for {@link readClaimsTtl}. */
export interface ReadClaimsTtlOptions {
  /** The pause before the `attempt`-th retry. Default 1 s doubling to 30 s. */
  retryMs?: (attempt: number) => number;
  onFailure?: (error: unknown, attempt: number) => void;
  scheduler?: SchedulerLike;
}

/**
 * The claims bucket's max age, read with retries until it can be (DECISIONS P8's rule, for the
 * claims): a bucket that cannot be read (not there, no rights, no JetStream) or has no max age (a
 * dead instance's claims would never lapse) is reported to `onFailure` and tried again.
 */
export function readClaimsTtl(store: ClaimStore, options: ReadClaimsTtlOptions = {}): Observable<number> {
  const { retryMs = (n: number) => Math.min(30_000, 1000 * 2 ** (n - 1)), onFailure, scheduler = asyncScheduler } = options;
  return once(() => store.ttl()).pipe(
    map((ttl) => {
      if (!(ttl > 0))
        throw new Error("the claims bucket has no max age: a dead instance's claims would never lapse; give it one (its TTL)");
      return ttl;
    }),
    retry({
      delay: (error: unknown, attempt: number) => {
        onFailure?.(error, attempt);
        return timer(retryMs(attempt), scheduler);
      },
    }),
  );
}
