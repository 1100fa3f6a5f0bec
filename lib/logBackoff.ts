/** Options for {@link LogBackoff}. */
export interface LogBackoffOptions {
  /** The gap after the first line. Default 1 s. */
  firstGapMs?: number;
  /** The gap never grows past this. Default 5 minutes. */
  maxGapMs?: number;
}

/** What {@link LogBackoff.next} decided for one failure. */
export interface LogBackoffDecision {
  /** Whether this failure gets a log line. */
  log: boolean;
  /** Failures since the last line that got none (so a line can say how many it stands for). */
  quiet: number;
}

/**
 * Which failures of a run of the same failure get a log line: the first at once, then the first
 * after a gap, the gap doubling from `firstGapMs` to `maxGapMs`. A broker down for an hour gives
 * about twenty lines rather than three thousand, and each says how many attempts it stands for.
 * Time is passed in, so the policy is tested without a clock.
 */
export class LogBackoff {
  private readonly firstGapMs: number;
  private readonly maxGapMs: number;
  private gap: number;
  private nextAt: number | undefined;
  private quiet = 0;

  constructor(options: LogBackoffOptions = {}) {
    this.firstGapMs = options.firstGapMs ?? 1000;
    this.maxGapMs = options.maxGapMs ?? 300_000;
    this.gap = this.firstGapMs;
  }

  /** A failure at `now` (ms): whether to log it, and how many failures went unlogged before it. */
  next(now: number): LogBackoffDecision {
    if (this.nextAt !== undefined && now < this.nextAt) {
      this.quiet++;
      return { log: false, quiet: this.quiet };
    }
    const quiet = this.quiet;
    this.quiet = 0;
    if (this.nextAt !== undefined) this.gap = Math.min(this.gap * 2, this.maxGapMs);
    this.nextAt = now + this.gap;
    return { log: true, quiet };
  }

  /** The run is over (connected again): the next failure is logged at once. */
  reset(): void {
    this.gap = this.firstGapMs;
    this.nextAt = undefined;
    this.quiet = 0;
  }
}
