import { SchedulerAction, SchedulerLike, Subscription } from 'rxjs';

/**
 * A scheduler that counts the timers it handed out and that are still armed.
 *
 * @group Testing
 */
export interface TrackingScheduler {
  /** Pass this to the operator under test. */
  readonly scheduler: SchedulerLike;
  /** How many timers scheduled through `scheduler` are still armed (not run, not cancelled). */
  armed(): number;
}

/**
 * Wraps a scheduler (a `TestScheduler`, usually) so that a spec can assert that an operator left
 * no timer behind: after unsubscribing, completion or an error, `armed()` should be 0.
 *
 * Timing is the wrapped scheduler's own: `now()` and `schedule()` are passed through.
 *
 * @example
 * ```ts
 * const timers = trackingScheduler(testScheduler);
 * source.pipe(debounceByKey({ key, scheduler: timers.scheduler })).subscribe().unsubscribe();
 * expect(timers.armed()).toBe(0);
 * ```
 *
 * @group Testing
 */
export function trackingScheduler(scheduler: SchedulerLike): TrackingScheduler {
  const timers: Subscription[] = [];
  const schedule = <S>(work: (this: SchedulerAction<S>, state?: S) => void, delay?: number, state?: S): Subscription => {
    const timer = scheduler.schedule(work, delay, state);
    timers.push(timer);
    return timer;
  };
  return {
    scheduler: { now: () => scheduler.now(), schedule },
    armed: () => timers.filter((timer) => !timer.closed).length,
  };
}
