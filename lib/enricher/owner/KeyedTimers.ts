import { SchedulerLike, Subscription } from 'rxjs';

/**
 * At most one pending timer per key: scheduling a key again replaces its timer, so a key read
 * again and again is never owed more than one re-read.
 */
export class KeyedTimers<K> {
  private readonly timers = new Map<K, Subscription>();

  constructor(
    private readonly scheduler: SchedulerLike,
    private readonly fire: (key: K) => void,
  ) {}

  /** Fires `key` `ms` from now, replacing any timer it had. */
  schedule(key: K, ms: number): void {
    this.cancel(key);
    const timer = this.scheduler.schedule(() => {
      this.timers.delete(key);
      timer.unsubscribe();
      this.fire(key);
    }, ms);
    this.timers.set(key, timer);
  }

  /** Drops `key`'s timer, if any. */
  cancel(key: K): void {
    const timer = this.timers.get(key);
    if (timer === undefined) return;
    this.timers.delete(key);
    timer.unsubscribe();
  }

  /** Drops every timer. */
  clear(): void {
    for (const timer of this.timers.values()) timer.unsubscribe();
    this.timers.clear();
  }

  /** Keys with a timer pending. */
  get size(): number {
    return this.timers.size;
  }
}
