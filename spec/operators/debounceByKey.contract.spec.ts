import { Subject, take } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { debounceByKey } from '@rxfleet/operators';
import { trackingScheduler } from '@rxfleet/operators/testing';
import { failOnUnhandledErrors } from './unhandledErrors';

// The key is the first letter; a trailing '!' may not be collapsed.
const key = (v: string): string => v[0];

describe('debounceByKey: the rxjs contract', () => {
  failOnUnhandledErrors();
  let ts: TestScheduler;
  beforeEach(() => {
    ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('`collapsible` throwing errors the output, unsubscribes the source and cancels every window', () => {
    const timers = trackingScheduler(ts);
    const boom = new Error('bad predicate');
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('ab-c--|', { a: 'x1', b: 'y1', c: 'x2' });
      const collapsible = (v: string): boolean => {
        if (v === 'x2') throw boom;
        return true;
      };
      expectObservable(source.pipe(debounceByKey({ key, collapsible, window: 10, scheduler: timers.scheduler }))).toBe(
        'ab-#',
        { a: 'x1', b: 'y1' },
        boom,
      );
      expectSubscriptions(source.subscriptions).toBe('^--!');
    });
    expect(timers.armed()).toBe(0);
  });

  it('unsubscribing downstream (take) unsubscribes the source and cancels every window', () => {
    const timers = trackingScheduler(ts);
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('abc---|', { a: 'x1', b: 'y1', c: 'x2' });
      expectObservable(source.pipe(debounceByKey({ key, window: 10, scheduler: timers.scheduler }), take(2))).toBe('a(b|)', {
        a: 'x1',
        b: 'y1',
      });
      expectSubscriptions(source.subscriptions).toBe('^!');
    });
    expect(timers.armed()).toBe(0);
  });

  it('a value fed back from inside an emission meets the window that emission opened, and a trailing one opens a new one', () => {
    const source = new Subject<string>();
    const out: string[] = [];
    ts.run(({ flush }) => {
      source.pipe(debounceByKey({ key, window: 5, scheduler: ts })).subscribe((v) => {
        out.push(v);
        // The leading edge feeds its own key back: held, since its window is already open.
        if (v === 'x1') source.next('x2');
        // The trailing value, emitted when the window closes, feeds another: a new leading edge.
        if (v === 'x2') source.next('x3');
      });
      source.next('x1');
      flush();
    });
    expect(out).toEqual(['x1', 'x2', 'x3']);
  });
});
