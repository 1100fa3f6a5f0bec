import { finalize } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { collectUntilIdle } from '@rxfleet/operators';
import { tracking } from '../helpers/marbles';

describe('collectUntilIdle', () => {
  let ts: TestScheduler;
  beforeEach(() => {
    ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it("behaves as its doc comment's first diagram says (idle)", () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('--a-b-c--------');
      const subs = '       ^--------!';
      const expected = '   ---------(x|)';
      expectObservable(source.pipe(collectUntilIdle({ idle: 3, timeout: 10, scheduler: ts }))).toBe(expected, { x: ['a', 'b', 'c'] });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it("behaves as its doc comment's second diagram says (timeout)", () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-----a-b-c-d-e-f-');
      const subs = '       ^---------!';
      const expected = '   ----------(y|)';
      expectObservable(source.pipe(collectUntilIdle({ idle: 3, timeout: 10, scheduler: ts }))).toBe(expected, { y: ['a', 'b', 'c'] });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('finishes 300 ms after the last value by default, leaving no timer armed', () => {
    const clock = tracking(ts);
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('100ms a 99ms b 199ms c 999ms |');
      const subs = '       ^ 699ms !';
      const expected = '   700ms (x|)';
      expectObservable(source.pipe(collectUntilIdle({ scheduler: clock.scheduler }))).toBe(expected, { x: ['a', 'b', 'c'] });
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAfter = clock.armed()), 701);
    });
    expect(armedAfter).toBe(0);
  });

  it('applies only the timeout before the first value', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      // An idle period counted from subscription would have ended this at 300 ms with nothing.
      const source = cold('1500ms a 999ms |');
      const subs = '       ^ 1799ms !';
      const expected = '   1800ms (x|)';
      expectObservable(source.pipe(collectUntilIdle({ scheduler: ts }))).toBe(expected, { x: ['a'] });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('finishes 2 s after subscription by default when values never stop', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('100ms a 199ms b 199ms c 199ms d 199ms e 199ms f 199ms g 199ms h 199ms i 199ms j 199ms k');
      const subs = '       ^ 1999ms !';
      const expected = '   2000ms (x|)';
      const x = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'];
      expectObservable(source.pipe(collectUntilIdle({ scheduler: ts }))).toBe(expected, { x });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('emits an empty array at the timeout when nothing arrived', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-');
      const subs = '       ^ 1999ms !';
      const expected = '   2000ms (x|)';
      expectObservable(source.pipe(collectUntilIdle({ scheduler: ts }))).toBe(expected, { x: [] });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('emits what was gathered at once when the source completes', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 49ms b 49ms |');
      const subs = '       ^ 99ms !';
      const expected = '   100ms (x|)';
      expectObservable(source.pipe(collectUntilIdle({ scheduler: ts }))).toBe(expected, { x: ['a', 'b'] });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('emits an empty array when the source completes having emitted nothing', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('50ms |');
      const subs = '       ^ 49ms !';
      const expected = '   50ms (x|)';
      expectObservable(source.pipe(collectUntilIdle({ scheduler: ts }))).toBe(expected, { x: [] });
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('errors at once when the source errors, cancelling both timers', () => {
    const clock = tracking(ts);
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 49ms #');
      const subs = '       ^ 49ms !';
      const expected = '   50ms #';
      expectObservable(source.pipe(collectUntilIdle({ scheduler: clock.scheduler }))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAfter = clock.armed()), 51);
    });
    expect(armedAfter).toBe(0);
  });

  it('unsubscribes the source and cancels both timers when unsubscribed', () => {
    const clock = tracking(ts);
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 999ms |');
      const unsub = '      ^ 99ms !';
      const subs = '       ^ 99ms !';
      const expected = '   ';
      expectObservable(source.pipe(collectUntilIdle({ scheduler: clock.scheduler })), unsub).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAfter = clock.armed()), 101);
    });
    expect(armedAfter).toBe(0);
  });

  it('stops listening before the array goes out', () => {
    const order: string[] = [];
    ts.run(({ cold, expectSubscriptions }) => {
      const source = cold('a 999ms |');
      source
        .pipe(
          finalize(() => order.push('source unsubscribed')),
          collectUntilIdle({ scheduler: ts }),
        )
        .subscribe(() => order.push('array emitted'));
      expectSubscriptions(source.subscriptions).toBe('^ 299ms !');
    });
    expect(order).toEqual(['source unsubscribed', 'array emitted']);
  });
});
