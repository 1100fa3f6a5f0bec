import { SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { checkCount, checkDelay, checkFunction, checkOptionalFunction } from './internal/checks.js';
import { reportUnhandled } from './internal/unhandled.js';

/**
 * Options for {@link RetryLadderSchedule}.
 *
 * @group Options
 */
export interface RetryLadderScheduleConfig<K> {
  /** Delay in ms before each of the first `fastAttempts` retries of a key, from 0. Default 1000. */
  fast?: number;
  /**
   * How many retries of a key are fast, counted since its last success: a whole number from 0
   * (`Infinity`: every retry is fast). Default 3.
   */
  fastAttempts?: number;
  /**
   * Delay in ms before the first slow retry, at least 1: a key that keeps failing is retried for
   * ever, so 0 would be a tight loop. Default 5000.
   */
  slow?: number;
  /**
   * Each later slow retry waits twice the one before, up to this many ms (raised to `slow` if
   * lower). Default `slow`: every slow retry waits `slow`, for as long as the key keeps failing.
   */
  maxSlow?: number;
  /**
   * Told each key whose retry is due ("try it again now"), with which retry it is since the key's
   * last success (1 for the first: retries up to `fastAttempts` are the fast ones).
   */
  onDue: (key: K, retry: number) => void;
  /** Told the number of keys with a retry pending whenever it changes (for a gauge). */
  onPendingChange?: (pending: number) => void;
  /** Where the retries are timed. Default `asyncScheduler`; pass a `TestScheduler` in specs. */
  scheduler?: SchedulerLike;
  /**
   * Where a throw from `onDue` or `onPendingChange` goes when a retry falls due (no call of yours
   * is on the stack then). Default: rxjs's path for an error with nowhere to go
   * (`config.onUnhandledError`, or thrown on a later turn).
   */
  onError?: (error: unknown) => void;
}

interface Ladder {
  /** Retries scheduled since the key's last success. */
  scheduled: number;
  pending: Subscription | undefined;
}

/**
 * A per-key retry schedule, as a synchronous core: the caller reports failures and successes of
 * keys from anywhere in its own code and is told when a key is due to be tried again. It is
 * `retryLadder`'s rule (fast retries, then slow ones for as long as the key keeps failing, one
 * pending per key) for an owner that learns of failures in the middle of its own work, where an
 * operator could only be fed through a Subject; and the slow retries may back off.
 *
 * Why fast then slow: the common failure is a moment of lateness (a lease not yet landed), which a
 * retry a second later fixes; a key still failing after that is waiting on something nobody
 * announces, and trying it at the fast pace for ever would cost as much as the rest of the fleet.
 * Why backing off: a key that may never recover (an instance that never gets an address) must cost
 * less and less, not the same for ever. Why one pending retry per key: a burst of failures on one
 * key must not become a burst of retries, each answered by another failure.
 *
 * ```
 * fast = 1, fastAttempts = 1, slow = 2, maxSlow = 8; f = fail(k), s = succeed(k), d = onDue(k)
 * calls: f-ff---f------f---------s-f
 * due:   -d--d------d----------d----d
 * ```
 * (the first retry is fast; the failure at 3 comes while one is pending and changes nothing; the
 * slow ones wait 2, 4, then 8 ms; after the success the next failure is retried fast again)
 *
 * Guarantees:
 * - A failure with no retry pending for its key schedules one: after `fast` ms while fewer than
 *   `fastAttempts` retries were scheduled since the key's last success, else after `slow` ms,
 *   doubled for every slow retry scheduled before it, at most `maxSlow` ms. A failure while a
 *   retry is pending changes nothing and is not counted.
 * - A success cancels the key's pending retry, if any, and forgets its count; every key is
 *   independent.
 * - `onDue(key, retry)` runs on the scheduler when the retry is due, `retry` counting from 1 since
 *   the key's last success; the key stays known (its count kept) until its next report, so a
 *   retry that is never answered is never repeated.
 * - `clear()` cancels every pending retry and forgets every key.
 *
 * A callback that throws never leaves the books half-updated: they are brought up to date first
 * (the retry scheduled and counted, cancelled, or consumed) and the callbacks are told last.
 * `onPendingChange` called from `fail`, `succeed` or `clear` throws out of that call. When a retry
 * falls due, the scheduler called, not you: what `onPendingChange` or `onDue` throws then goes to
 * `onError` (retryLadder's is its output's error; without one, to rxjs's path for an error with
 * nowhere to go), and a throwing `onPendingChange` keeps `onDue` from being told of that retry.
 *
 * Bad options are refused when the schedule is made, with one error naming the option and the
 * value: see the constructor.
 *
 * @example Re-read a key whose read failed, from inside an owner's own code
 * ```ts
 * const retries: RetryLadderSchedule<string> = new RetryLadderSchedule<string>({
 *   onDue: (key) => void read(key).then(() => retries.succeed(key), () => retries.fail(key)),
 *   onPendingChange: (n) => pendingGauge.set(n),
 * });
 * retries.fail('web1'); // read again in 1 s, 2 s, 3 s, then every 5 s until it succeeds
 * ```
 *
 * @group Cores
 */
export class RetryLadderSchedule<K> {
  private readonly ladders = new Map<K, Ladder>();
  private pendingCount = 0;
  private readonly fast: number;
  private readonly fastAttempts: number;
  private readonly slow: number;
  private readonly maxSlow: number;
  private readonly scheduler: SchedulerLike;

  /**
   * @param config `onDue` (required), `fast`, `fastAttempts`, `slow`, `maxSlow`,
   * `onPendingChange`, `onError`, `scheduler`.
   * @throws RangeError if a delay is negative, not a number or longer than a timer can wait
   * (2147483647 ms), `slow` is below 1, or `fastAttempts` is not a whole number from 0 (nor
   * `Infinity`); TypeError if `onDue`, `onPendingChange` or `onError` is not a function.
   */
  constructor(private readonly config: RetryLadderScheduleConfig<K>) {
    checkLadder('RetryLadderSchedule', config);
    checkFunction('RetryLadderSchedule', 'onDue', config.onDue);
    checkOptionalFunction('RetryLadderSchedule', 'onError', config.onError);
    this.fast = config.fast ?? 1000;
    this.fastAttempts = config.fastAttempts ?? 3;
    this.slow = config.slow ?? 5000;
    this.maxSlow = Math.max(config.maxSlow ?? this.slow, this.slow);
    this.scheduler = config.scheduler ?? asyncScheduler;
  }

  /** Keys with a retry pending. */
  get pending(): number {
    return this.pendingCount;
  }

  /** Keys that failed and have not succeeded since (a retry pending or not). */
  get size(): number {
    return this.ladders.size;
  }

  /** Whether `key` failed and has not succeeded since. */
  has(key: K): boolean {
    return this.ladders.has(key);
  }

  /** Whether `key` has a retry pending. */
  isPending(key: K): boolean {
    return this.ladders.get(key)?.pending !== undefined;
  }

  /** Reports a failure of `key`; whether a retry was scheduled by it. */
  fail(key: K): boolean {
    let ladder = this.ladders.get(key);
    if (ladder === undefined) {
      ladder = { scheduled: 0, pending: undefined };
      this.ladders.set(key, ladder);
    }
    if (ladder.pending !== undefined) return false;
    const owed = ladder;
    const number = ++owed.scheduled;
    const retry = this.scheduler.schedule(
      () => {
        retry.unsubscribe();
        owed.pending = undefined;
        this.pendingCount--;
        // A timer runs outside every call of the caller's: a throw is routed, not left to the scheduler.
        try {
          this.config.onPendingChange?.(this.pendingCount);
          this.config.onDue(key, number);
        } catch (error) {
          (this.config.onError ?? reportUnhandled)(error);
        }
      },
      this.delay(number - 1),
    );
    // Kept in the ladder, not in a parent Subscription: RxJS removes a finished child with indexOf
    // + splice, quadratic with thousands of keys pending.
    owed.pending = retry;
    this.count(+1);
    return true;
  }

  /** Reports a success of `key`: its pending retry is cancelled and its count forgotten. */
  succeed(key: K): void {
    const ladder = this.ladders.get(key);
    if (ladder === undefined) return;
    this.ladders.delete(key);
    if (ladder.pending !== undefined) {
      ladder.pending.unsubscribe();
      this.count(-1);
    }
  }

  /** Cancels every pending retry and forgets every key. */
  clear(): void {
    for (const ladder of this.ladders.values()) ladder.pending?.unsubscribe();
    this.ladders.clear();
    if (this.pendingCount !== 0) {
      this.pendingCount = 0;
      this.config.onPendingChange?.(0);
    }
  }

  private delay(retry: number): number {
    if (retry < this.fastAttempts) return this.fast;
    return Math.min(this.slow * 2 ** (retry - this.fastAttempts), this.maxSlow);
  }

  private count(delta: number): void {
    this.pendingCount += delta;
    this.config.onPendingChange?.(this.pendingCount);
  }
}

/**
 * The checks of a ladder's options, shared by the core and {@link retryLadder}, each naming itself
 * (`where`): what `delay` computes must be a wait a timer can hold, or a broken key would be
 * retried in a tight loop.
 */
export function checkLadder(where: string, config: Omit<RetryLadderScheduleConfig<unknown>, 'onDue' | 'onError'>): void {
  const { fast = 1000, fastAttempts = 3, slow = 5000, maxSlow } = config;
  checkDelay(where, 'fast', fast);
  checkCount(where, 'fastAttempts', fastAttempts, 0);
  checkDelay(where, 'slow', slow, 1);
  if (maxSlow !== undefined) checkDelay(where, 'maxSlow', maxSlow);
  checkOptionalFunction(where, 'onPendingChange', config.onPendingChange);
}
