import { Subject, UnsubscriptionError, take } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { Attempt, retryLadder } from '@rxfleet/operators';
import { trackingScheduler } from '@rxfleet/operators/testing';
import { failOnUnhandledErrors } from './unhandledErrors';

const reports: Record<string, Attempt<string>> = { f: { key: 'k', ok: false }, g: { key: 'j', ok: false } };

describe('retryLadder: the rxjs contract', () => {
  failOnUnhandledErrors();
  let ts: TestScheduler;
  beforeEach(() => {
    ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('`onPendingChange` throwing as a failure schedules a retry errors the output and cancels the retries', () => {
    const timers = trackingScheduler(ts);
    const boom = new Error('gauge broke');
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('f-g---|', reports);
      const onPendingChange = (n: number): void => {
        if (n === 2) throw boom;
      };
      expectObservable(source.pipe(retryLadder({ fast: 5, onPendingChange, scheduler: timers.scheduler }))).toBe('--#', undefined, boom);
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
    expect(timers.armed()).toBe(0);
  });

  it("`onPendingChange` throwing when a retry's timer fires errors the output instead of escaping from the timer", () => {
    const boom = new Error('gauge broke');
    ts.run(({ hot, expectObservable }) => {
      const source = hot('f-----', reports);
      const onPendingChange = (n: number): void => {
        if (n === 0) throw boom;
      };
      expectObservable(source.pipe(retryLadder({ fast: 3, onPendingChange, scheduler: ts }))).toBe('---#', undefined, boom);
    });
  });

  it("at teardown, with no output left to error, `onPendingChange`'s throw comes out of unsubscribe", () => {
    const source = new Subject<Attempt<string>>();
    const subscription = source
      .pipe(
        retryLadder({
          onPendingChange: (n) => {
            if (n === 0) throw new Error('gauge broke');
          },
        }),
      )
      .subscribe();
    source.next({ key: 'k', ok: false });
    expect(() => subscription.unsubscribe()).toThrow(UnsubscriptionError);
  });

  it('unsubscribing downstream (take) unsubscribes the source and cancels the other retries', () => {
    const timers = trackingScheduler(ts);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('fg----|', reports);
      expectObservable(source.pipe(retryLadder({ fast: 2, scheduler: timers.scheduler }), take(1))).toBe('--(k|)', { k: 'k' });
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
    expect(timers.armed()).toBe(0);
  });

  it('climbs its ladder when every retry is answered, synchronously, by another failure', () => {
    const source = new Subject<Attempt<string>>();
    const at: number[] = [];
    ts.run(({ flush }) => {
      const subscription = source.pipe(retryLadder({ scheduler: ts })).subscribe((key) => {
        at.push(ts.now());
        if (at.length < 6) source.next({ key, ok: false });
      });
      source.next({ key: 'k', ok: false });
      flush();
      subscription.unsubscribe();
    });
    expect(at).toEqual([1000, 2000, 3000, 8000, 13000, 18000]);
  });
});
