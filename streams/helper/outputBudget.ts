/**
 * The most helper output the daemon holds at once, across every run in flight: each run's stdout
 * is kept in memory until the helper exits (it is one JSON document), so without a shared cap the
 * peak is `workers` x the per-run cap. A run whose next chunk does not fit is ended (its process
 * group killed) and fails; the others go on.
 */
export class HelperOutputBudget {
  private used = 0;

  constructor(
    /** Bytes held at most, across runs. */
    readonly limitBytes: number,
  ) {}

  /** Bytes held now. */
  get held(): number {
    return this.used;
  }

  /** Takes `bytes` if they fit; false (taking nothing) if they do not. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.limitBytes) return false;
    this.used += bytes;
    return true;
  }

  /** Gives back what a finished run held. */
  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}
