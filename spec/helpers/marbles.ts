import { SchedulerAction, SchedulerLike, Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';

/** A fresh TestScheduler whose frames are compared with Jest's deep equality. */
export const newScheduler = (): TestScheduler => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

/** The type `cold()` returns in run mode (its `subscriptions` are what `expectSubscriptions` reads). */
export type Cold<T> = ReturnType<typeof TestScheduler.prototype.createColdObservable<T>>;

/** A scheduler that remembers every timer it hands out, so a spec can ask how many are still armed. */
export function tracking(ts: TestScheduler): { scheduler: SchedulerLike; armed: () => number } {
  const timers: Subscription[] = [];
  const schedule = <S>(work: (this: SchedulerAction<S>, state?: S) => void, delay?: number, state?: S): Subscription => {
    const timer = ts.schedule(work, delay, state);
    timers.push(timer);
    return timer;
  };
  return { scheduler: { now: () => ts.now(), schedule }, armed: () => timers.filter((t) => !t.closed).length };
}
