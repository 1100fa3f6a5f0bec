import { of, take } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { collectUntilIdle } from '@rxfleet/operators';
import { trackingScheduler } from '@rxfleet/operators/testing';
import { failOnUnhandledErrors } from './unhandledErrors';

// collectUntilIdle calls no function of yours, so nothing of yours can throw inside it.

describe('collectUntilIdle: the rxjs contract', () => {
  failOnUnhandledErrors();
  let ts: TestScheduler;
  beforeEach(() => {
    ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('a synchronous source that completes gives its values at once, leaving no timer', () => {
    const timers = trackingScheduler(ts);
    ts.run(({ expectObservable }) => {
      expectObservable(of('a', 'b', 'c').pipe(collectUntilIdle({ idle: 3, timeout: 10, scheduler: timers.scheduler }))).toBe('(x|)', {
        x: ['a', 'b', 'c'],
      });
    });
    expect(timers.armed()).toBe(0);
  });

  it('unsubscribing downstream before the answer unsubscribes the source and cancels both timers', () => {
    const timers = trackingScheduler(ts);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a-b----');
      expectObservable(source.pipe(collectUntilIdle({ idle: 3, timeout: 10, scheduler: timers.scheduler }), take(1)), '--!').toBe('---');
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
    expect(timers.armed()).toBe(0);
  });
});
