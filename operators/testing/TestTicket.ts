import type { PoolTicket } from '../outcomes.js';

/**
 * What happened to a {@link TestTicket}, in order.
 *
 * @group Testing
 */
export type TestTicketEvent = 'start' | 'skip' | 'hold' | 'free';

/**
 * Options for {@link TestTicket}.
 *
 * @group Testing
 */
export interface TestTicketOptions {
  /** The ticket went stale before a worker reached it: `start()` returns false. Default false. */
  stale?: boolean;
  /** Stamps each event (`() => testScheduler.now()`, say). Default: no stamps (`at` is 0). */
  now?: () => number;
}

/**
 * A {@link PoolTicket} that records what a pool did with it, for specs of pipelines built on
 * `workerPool` without an `AdmissionLedger`: whether it was started or skipped, held,
 * and how many times it was freed (a pool frees a ticket exactly once).
 *
 * @example
 * ```ts
 * const a = new TestTicket('a', { now: () => testScheduler.now() });
 * // ... run the pool ...
 * expect(a.events).toEqual([{ event: 'start', at: 0 }, { event: 'free', at: 3 }]);
 * expect(a.frees).toBe(1);
 * ```
 *
 * @group Testing
 */
export class TestTicket<N = string> implements PoolTicket {
  /** Every call the pool made, in order, with the time `now` gave. */
  readonly events: {
    /** What the pool did. */
    event: TestTicketEvent;
    /** When, by `options.now`. */
    at: number;
  }[] = [];
  private readonly stale: boolean;
  private readonly now: () => number;

  constructor(
    /** What the ticket stands for; the specs' handle on it. */
    readonly name: N,
    options: TestTicketOptions = {},
  ) {
    this.stale = options.stale ?? false;
    this.now = options.now ?? (() => 0);
  }

  /** How many times `free()` was called. */
  get frees(): number {
    return this.events.filter((e) => e.event === 'free').length;
  }

  /** Whether `start()` was called and returned true. */
  get started(): boolean {
    return this.events.some((e) => e.event === 'start');
  }

  start(): boolean {
    this.events.push({ event: this.stale ? 'skip' : 'start', at: this.now() });
    return !this.stale;
  }

  hold(): void {
    this.events.push({ event: 'hold', at: this.now() });
  }

  free(): void {
    this.events.push({ event: 'free', at: this.now() });
  }
}
