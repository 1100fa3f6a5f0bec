/**
 * The in-memory server's delivery: work runs asynchronously and in the order it was queued, in
 * batches on `setImmediate`. Work queued while a batch runs waits for the next turn, so a storm of
 * request and reply never starves timers and I/O.
 */
export class DeliveryQueue {
  private readonly queue: Array<() => void> = [];
  private scheduled = false;

  /** Runs `work` on a later turn, after everything queued before it. */
  enqueue(work: () => void): void {
    this.queue.push(work);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.run());
  }

  /** Resolves once everything queued before the call has run. */
  flush(): Promise<void> {
    return new Promise((resolve) => this.enqueue(resolve));
  }

  private run(): void {
    // Only what was queued before this batch: work queued while delivering waits for the next turn.
    const batch = this.queue.splice(0, this.queue.length);
    this.scheduled = false;
    for (const work of batch) work();
    if (this.queue.length > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.run());
    }
  }
}
