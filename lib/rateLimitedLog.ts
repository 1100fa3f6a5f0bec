import { SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { Logger } from './logger';

/** Options for {@link RateLimitedLog}. */
export interface RateLimitedLogOptions {
  logger: Logger;
  /** Default `warn`. */
  level?: 'debug' | 'info' | 'warn' | 'error';
  /** Lines logged in full per key and interval. Default 5. */
  burst?: number;
  /** The length of one interval, ms. Default 60 s. */
  intervalMs?: number;
  /** The clock and the summary timer. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

interface Window {
  startedAt: number;
  logged: number;
  suppressed: number;
  total: number;
  timer: Subscription | undefined;
  /** The last suppressed line's fields and message, shown in the summary as an example. */
  last: { fields: Record<string, unknown>; message: string } | undefined;
}

/**
 * A log for floods: per key (a source of bad input, say), the first `burst` lines of an interval
 * are logged in full; the rest are counted, and when the interval ends one summary line says how
 * many were held back, with the last of them as an example. A steady flood costs `burst + 1`
 * lines per interval whatever its rate; a trickle is logged line by line.
 *
 * ```
 * burst 2, interval 60 s; a..e lines of one key, S the summary
 * input:  a b c d e ------------------------------| f
 * logged: a b ------------------------------------S f      S: "3 more in the last 60 s (5 in all)"
 * ```
 *
 * Guarantees:
 * - no line is lost without being counted: `total(key)` counts every line handed in;
 * - a summary is logged only for an interval that held lines back, at its end (the timer is armed
 *   only then, so a quiet log holds no timer);
 * - `close()` logs the summaries still pending at once and cancels every timer; lines after it
 *   are logged in full.
 *
 * Counting for metrics is the caller's job: this is only about the log's volume.
 */
export class RateLimitedLog {
  private readonly logger: Logger;
  private readonly level: NonNullable<RateLimitedLogOptions['level']>;
  private readonly burst: number;
  private readonly intervalMs: number;
  private readonly scheduler: SchedulerLike;
  private readonly windows = new Map<string, Window>();
  private closed = false;

  constructor(options: RateLimitedLogOptions) {
    this.logger = options.logger;
    this.level = options.level ?? 'warn';
    this.burst = options.burst ?? 5;
    this.intervalMs = options.intervalMs ?? 60_000;
    this.scheduler = options.scheduler ?? asyncScheduler;
  }

  /** Logs `message` with `fields` (and `key`), or counts it for the interval's summary. */
  log(key: string, fields: Record<string, unknown>, message: string): void {
    if (this.closed) {
      this.logger[this.level]({ ...fields, key }, message);
      return;
    }
    const now = this.scheduler.now();
    let window = this.windows.get(key);
    if (window === undefined) {
      window = { startedAt: now, logged: 0, suppressed: 0, total: 0, timer: undefined, last: undefined };
      this.windows.set(key, window);
    } else if (window.timer === undefined && now - window.startedAt >= this.intervalMs) {
      // A window that held nothing back ends lazily, at the next line.
      window.startedAt = now;
      window.logged = 0;
    }
    window.total++;
    if (window.logged < this.burst) {
      window.logged++;
      this.logger[this.level]({ ...fields, key }, message);
      return;
    }
    window.suppressed++;
    window.last = { fields, message };
    if (window.timer === undefined) {
      const current = window;
      current.timer = this.scheduler.schedule(() => this.summarise(key, current), Math.max(0, current.startedAt + this.intervalMs - now));
    }
  }

  /** Every line handed in for `key` (or for every key), logged or not. */
  total(key?: string): number {
    if (key !== undefined) return this.windows.get(key)?.total ?? 0;
    let n = 0;
    for (const window of this.windows.values()) n += window.total;
    return n;
  }

  /** Logs every pending summary now and cancels the timers; later lines are logged in full. */
  close(): void {
    if (this.closed) return;
    for (const [key, window] of this.windows) if (window.timer !== undefined) this.summarise(key, window);
    this.closed = true;
  }

  private summarise(key: string, window: Window): void {
    window.timer?.unsubscribe();
    window.timer = undefined;
    const seconds = Math.round(this.intervalMs / 1000);
    this.logger[this.level](
      { ...window.last?.fields, key, suppressed: window.suppressed, total: window.total },
      `${window.suppressed} more like this in the last ${seconds} s, not logged (${window.total} in all since start); the last: ${window.last?.message ?? ''}`,
    );
    window.suppressed = 0;
    window.last = undefined;
    window.logged = 0;
    window.startedAt = this.scheduler.now();
  }
}
