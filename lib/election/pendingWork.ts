import { ObservableInput, SchedulerLike, Subscription, from, take } from 'rxjs';

/** A campaign's timers and store calls in flight, all torn down together through {@link subscription}. */
export interface PendingWork {
  /** Holds every timer and call not yet settled; unsubscribing it cancels them all. */
  readonly subscription: Subscription;
  /** Runs `step` after `ms` on the scheduler. */
  later(ms: number, step: () => void): void;
  /**
   * Makes one store call and hands its first answer to `onValue`, or its failure to `onError`: a
   * call that throws, errors or completes without answering is a failure.
   */
  call<T>(operation: () => ObservableInput<T>, onValue: (value: T) => void, onError: (error: unknown) => void): void;
}

/**
 * The work a campaign has in flight, timed on `scheduler`. A settled timer or call leaves
 * {@link PendingWork.subscription} at once, so a campaign that runs for months holds only what is
 * still pending.
 */
export function pendingWork(scheduler: SchedulerLike): PendingWork {
  const work = new Subscription();

  const later = (ms: number, step: () => void): void => {
    const timer = scheduler.schedule(() => {
      work.remove(timer);
      step();
    }, ms);
    work.add(timer);
  };

  const call = <T>(operation: () => ObservableInput<T>, onValue: (value: T) => void, onError: (error: unknown) => void): void => {
    let input: ObservableInput<T>;
    try {
      input = operation();
    } catch (error) {
      onError(error);
      return;
    }
    const inner = new Subscription();
    work.add(inner);
    const settle = (): void => {
      work.remove(inner);
      inner.unsubscribe();
    };
    inner.add(
      from(input)
        .pipe(take(1))
        .subscribe({
          next: (value) => {
            settle();
            onValue(value);
          },
          error: (error: unknown) => {
            settle();
            onError(error);
          },
          complete: () => {
            if (!inner.closed) {
              settle();
              onError(new Error('election store answered nothing'));
            }
          },
        }),
    );
  };

  return { subscription: work, later, call };
}
