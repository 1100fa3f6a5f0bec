import { Observable, defer, of, throwError } from 'rxjs';
import { ClaimHeldError, ClaimStore } from '../../lib/provision/claims/claims';

/** Options for {@link MemoryClaimBucket}. */
export interface MemoryClaimBucketOptions {
  /** The bucket's max age, ms. Default 60 s. */
  ttlMs?: number;
  /** The clock values age by, ms. Default `Date.now`. */
  now?: () => number;
}

interface Entry {
  value: string;
  revision: number;
  writtenAt: number;
}

/**
 * The claims bucket in memory, for the in-process demo and unit specs: the semantics
 * {@link natsClaimStore} gets from a JetStream KV bucket with a max age and one value per key
 * (measured on nats-server 2.9.10, reference nats-kv-claims.md). Revisions only grow, across keys
 * as a stream's sequence does; a write expecting a stale revision is refused; a value older than
 * the TTL is gone; a deleted key can be created again. Several instances share one bucket through
 * {@link store}.
 */
export class MemoryClaimBucket {
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly entries = new Map<string, Entry>();
  private sequence = 0;

  constructor(options: MemoryClaimBucketOptions = {}) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Who holds `key` now (`undefined` when nobody does or it aged out). */
  holder(key: string): string | undefined {
    return this.live(key)?.value;
  }

  /** Keys held now. */
  size(): number {
    for (const key of [...this.entries.keys()]) this.live(key);
    return this.entries.size;
  }

  /** Writes `key` whoever holds it, as an administrator's `nats kv put` would. */
  put(key: string, value: string): number {
    this.entries.set(key, { value, revision: ++this.sequence, writtenAt: this.now() });
    return this.sequence;
  }

  /** A {@link ClaimStore} over this bucket. */
  store(): ClaimStore {
    return {
      ttl: () => of(this.ttlMs),
      create: (key, value) => this.write(key, value, 0),
      update: (key, value, revision) => this.write(key, value, revision),
      adopt: (key, value) =>
        defer(() => {
          const entry = this.live(key);
          if (entry?.value !== value) return throwError(() => new ClaimHeldError(key, 'held by another provisioner'));
          return this.write(key, value, entry.revision);
        }),
      release: (key, revision) =>
        defer(() => {
          if (this.live(key)?.revision === revision) this.entries.delete(key);
          return of(undefined);
        }),
    };
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry !== undefined && this.now() - entry.writtenAt >= this.ttlMs) this.entries.delete(key);
    return this.entries.get(key);
  }

  private write(key: string, value: string, expected: number): Observable<number> {
    return defer(() => {
      const current = this.live(key)?.revision ?? 0;
      if (current !== expected) return throwError(() => new ClaimHeldError(key, `wrong last sequence: ${current}`));
      return of(this.put(key, value));
    });
  }
}
