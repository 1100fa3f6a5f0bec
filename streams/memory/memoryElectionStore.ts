import { Observable, defer, throwError, of } from 'rxjs';
import { ElectionStore } from '../../lib/election/ElectionStore';

/** Options for {@link MemoryElectionBucket}. */
export interface MemoryElectionBucketOptions {
  /** The bucket's TTL (a stream's `max_age`), ms. Default 60 s, a Choria broker's default. */
  ttlMs?: number;
  /** The clock that ages the key, ms. Default `Date.now`. */
  now?: () => number;
}

/** Refused like JetStream refuses a publish with the wrong expected sequence (err_code 10071). */
export class WrongLastSequenceError extends Error {
  override readonly name = 'WrongLastSequenceError';
  readonly errCode = 10071;
  constructor(expected: number, actual: number) {
    super(`wrong last sequence: ${actual} (expected ${expected})`);
  }
}

/**
 * The election bucket in memory, for the in-process demo and unit tests: one key, compare-and-swap
 * by sequence, expiry by the bucket TTL, exactly the semantics {@link natsElectionStore} gets from
 * JetStream (`Nats-Expected-Last-Subject-Sequence` on a stream with `max_age`). Several candidates
 * share one bucket through {@link store}.
 *
 * Guarantees: sequences only grow; a write with a stale expected sequence is refused; a key older
 * than the TTL is gone (a create succeeds, an update from its sequence is refused).
 */
export class MemoryElectionBucket {
  private readonly ttlMs: number;
  private readonly now: () => number;
  private sequence = 0;
  private entry: { value: string; sequence: number; writtenAt: number } | undefined;

  constructor(options: MemoryElectionBucketOptions = {}) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.now = options.now ?? Date.now;
  }

  /** Who holds the key now (`undefined` when nobody does or it expired). */
  holder(): string | undefined {
    return this.live()?.value;
  }

  /** Writes the key regardless of who holds it, as another provisioner's create after expiry would. */
  seize(value: string): number {
    this.entry = { value, sequence: ++this.sequence, writtenAt: this.now() };
    return this.sequence;
  }

  /** Forgets the key, as its expiry would. */
  expire(): void {
    this.entry = undefined;
  }

  /** An {@link ElectionStore} over this bucket. */
  store(): ElectionStore {
    return {
      ttl: () => of(this.ttlMs),
      create: (value) => this.write(value, 0),
      update: (value, lastSequence) => this.write(value, lastSequence),
    };
  }

  private live(): { value: string; sequence: number; writtenAt: number } | undefined {
    if (this.entry !== undefined && this.now() - this.entry.writtenAt >= this.ttlMs) this.entry = undefined;
    return this.entry;
  }

  private write(value: string, expected: number): Observable<number> {
    return defer(() => {
      const current = this.live()?.sequence ?? 0;
      if (current !== expected) return throwError(() => new WrongLastSequenceError(expected, current));
      this.entry = { value, sequence: ++this.sequence, writtenAt: this.now() };
      return of(this.sequence);
    });
  }
}
