import { SchedulerAction, SchedulerLike, Subscription } from 'rxjs';
import { RingQueue } from '@rxfleet/operators';

interface Entry {
  readonly due: number;
  readonly work: (this: SchedulerAction<unknown>, state?: unknown) => void;
  readonly state: unknown;
  cancelled: boolean;
}

interface Line {
  readonly queue: RingQueue<Entry>;
  live: number;
  timer: Subscription | undefined;
}

/**
 * A scheduler that runs delayed work with one timer per distinct delay instead of one per call:
 * work scheduled with the same delay is due in the order it was scheduled, so a FIFO ring per
 * delay and a timer for its head are exact. The worker pool schedules a release per provisioned
 * node, all with the same settle delay; at a thousand nodes a second that is sixty thousand
 * timers held for a minute, and here it is one (DECISIONS P17's scale, issue 15).
 *
 * Guarantees:
 * - Work runs no earlier than its delay, in scheduling order per delay, on the underlying scheduler.
 * - Unsubscribing cancels the work; a line with nothing live left cancels its timer, so nothing
 *   keeps the process alive.
 * - Work with no delay goes straight to the underlying scheduler.
 *
 * It is for work that does not reschedule itself: delayed work is called with `this` undefined,
 * not a {@link SchedulerAction}. (Generic: it belongs beside `workerPool` in the operator kit.)
 */
export function batchedDelays(scheduler: SchedulerLike): SchedulerLike {
  const lines = new Map<number, Line>();

  const arm = (line: Line): void => {
    line.timer?.unsubscribe();
    line.timer = undefined;
    let head = line.queue.peek();
    while (head?.cancelled === true) {
      line.queue.shift();
      head = line.queue.peek();
    }
    if (head === undefined) return;
    line.timer = scheduler.schedule(() => fire(line), Math.max(0, head.due - scheduler.now()));
  };

  const fire = (line: Line): void => {
    line.timer = undefined;
    const now = scheduler.now();
    try {
      for (let head = line.queue.peek(); head !== undefined && (head.cancelled || head.due <= now); head = line.queue.peek()) {
        line.queue.shift();
        if (head.cancelled) continue;
        head.cancelled = true;
        line.live--;
        head.work.call(undefined as unknown as SchedulerAction<unknown>, head.state);
      }
    } finally {
      // Work that throws still leaves the rest of its line armed.
      arm(line);
    }
  };

  return {
    now: () => scheduler.now(),
    schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T): Subscription {
      if (!(delay > 0)) return scheduler.schedule(work, delay, state);
      let line = lines.get(delay);
      if (line === undefined) {
        line = { queue: new RingQueue<Entry>(), live: 0, timer: undefined };
        lines.set(delay, line);
      }
      const entry: Entry = { due: scheduler.now() + delay, work: work as Entry['work'], state, cancelled: false };
      line.queue.push(entry);
      line.live++;
      if (line.timer === undefined) arm(line);
      const owner = line;
      return new Subscription(() => {
        if (entry.cancelled) return;
        entry.cancelled = true;
        owner.live--;
        if (owner.live === 0) {
          owner.timer?.unsubscribe();
          owner.timer = undefined;
          owner.queue.clear();
        }
      });
    },
  };
}
