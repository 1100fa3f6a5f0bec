/**
 * What each instance is owed after a read: nothing, a repair soon (the read failed or could not
 * be placed), a repair that backs off (it runs without an address yet), or a re-read after the TTL.
 */
import { SchedulerLike } from 'rxjs';
import { RetryLadderSchedule } from '@rxfleet/operators';
import { KeyedTimers } from './KeyedTimers';

/** A repair ladder: `fast` ms `fastAttempts` times, then `slow` ms, doubling up to `maxSlow`. */
export interface Ladder {
  readonly fast: number;
  readonly fastAttempts: number;
  readonly slow: number;
  readonly maxSlow?: number;
}

/** Why a key is read again, and whether that read may wait for an address. */
export interface Due {
  readonly key: string;
  readonly origin: 'repair' | 'ttl';
  /** Poll for an address (up to the IP timeout) if the instance runs without one. */
  readonly wait: boolean;
}

/** Options for {@link Repairs}. */
export interface RepairsConfig {
  readonly scheduler: SchedulerLike;
  /** Ms after a good read to read the instance again; 0: never. */
  readonly ttl: number;
  /** A read that failed (E2). Default 1 s × 3, then every 5 s for as long as it fails. */
  readonly failures?: Ladder;
  /** An instance without an address (E11). Default 1 s × 3, then 5 s doubling to 5 min. */
  readonly addresses?: Ladder;
  /** Told each read that is due. */
  readonly onDue: (due: Due) => void;
  /** Told the keys with a repair pending and the instances waiting for an address, on every change. */
  readonly onChange: (pending: number, awaitingAddress: number) => void;
}

/**
 * The repair schedule of every instance, at most one repair pending per key (E2).
 *
 * A failed read is retried at the upstream pace for ever: the server is having a bad moment, and
 * the round is hours away. An instance that runs without an address is different: the first
 * repairs poll for the lease as a start does (it is usually a moment late), later ones only read
 * it, ever more rarely, so instances that never get one cost next to nothing and hold no worker;
 * an event from Incus about the instance starts its ladder over (E11).
 */
export class Repairs {
  private readonly failures: RetryLadderSchedule<string>;
  private readonly addresses: RetryLadderSchedule<string>;
  private readonly ttlTimers: KeyedTimers<string>;
  private readonly addressFastAttempts: number;

  constructor(private readonly config: RepairsConfig) {
    const { scheduler } = config;
    const failures = config.failures ?? { fast: 1000, fastAttempts: 3, slow: 5000 };
    const addresses = config.addresses ?? { fast: 1000, fastAttempts: 3, slow: 5000, maxSlow: 300_000 };
    this.addressFastAttempts = addresses.fastAttempts;
    const changed = (): void => config.onChange(this.failures.pending + this.addresses.pending, this.addresses.size);
    this.failures = new RetryLadderSchedule({
      ...failures,
      scheduler,
      onDue: (key) => config.onDue({ key, origin: 'repair', wait: true }),
      onPendingChange: changed,
    });
    this.addresses = new RetryLadderSchedule({
      ...addresses,
      scheduler,
      onDue: (key, retry) => config.onDue({ key, origin: 'repair', wait: retry <= this.addressFastAttempts }),
      onPendingChange: changed,
    });
    this.ttlTimers = new KeyedTimers(scheduler, (key) => config.onDue({ key, origin: 'ttl', wait: true }));
  }

  /** The read failed, or could not be placed: read it again soon, unless a repair is due already. */
  failed(key: string): void {
    if (!this.addresses.isPending(key)) this.failures.fail(key);
  }

  /** The read found it running without an address: read it again, backing off. */
  awaitingAddress(key: string): void {
    this.failures.succeed(key);
    if (this.addresses.fail(key)) return;
    this.report();
  }

  /** The read found what there is to find: nothing owed but the TTL's re-read. */
  good(key: string): void {
    this.settle(key);
    if (this.config.ttl > 0) this.ttlTimers.schedule(key, this.config.ttl);
  }

  /** The instance is gone, or no longer served: nothing owed. */
  forget(key: string): void {
    this.settle(key);
    this.ttlTimers.cancel(key);
  }

  /** Incus said something about the instance: its address ladder starts over from the fast rungs. */
  live(key: string): void {
    if (!this.addresses.has(key)) return;
    this.addresses.succeed(key);
    this.report();
  }

  /** Cancels everything pending. */
  clear(): void {
    this.failures.clear();
    this.addresses.clear();
    this.ttlTimers.clear();
  }

  private settle(key: string): void {
    const known = this.addresses.has(key);
    this.failures.succeed(key);
    this.addresses.succeed(key);
    if (known) this.report();
  }

  // The awaiting count changes without the pending count when a key is known but not pending.
  private report(): void {
    this.config.onChange(this.failures.pending + this.addresses.pending, this.addresses.size);
  }
}
