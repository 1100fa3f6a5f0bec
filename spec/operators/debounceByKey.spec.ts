import { Observable, map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { debounceByKey } from '@rxfleet/operators';
import { tracking } from '../helpers/marbles';

// The key is the first letter; `_` means "about nothing"; a trailing `!` may not be collapsed.
const values = {
  a: 'x1',
  b: 'x2',
  c: 'x3',
  d: 'x4',
  n: 'x!',
  p: 'y1',
  q: 'y2',
  u: '_1',
  A: 'X1',
  B: 'X2',
  C: 'X3',
};
const key = (v: string): string | undefined => (v.startsWith('_') ? undefined : v[0]);
const collapsible = (v: string): boolean => !v.endsWith('!');
const superseded = (v: string): string => v.toUpperCase();

describe('debounceByKey', () => {
  let ts: TestScheduler;
  beforeEach(() => {
    ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it("behaves as its doc comment's diagram says", () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a-b-c------p-d--|', values);
      const subs = '       ^----------------!';
      const expected = '   -a---B--c---p-d--|';
      expectObservable(source.pipe(debounceByKey({ key, window: 3, superseded, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('emits the leading value at once, marks a superseded one at once, and the trailing one after 250 ms of quiet by default', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 100ms b 100ms c 300ms |', values);
      const subs = '       ^ 502ms !';
      const expected = '   a 201ms B 249ms c 50ms |';
      expectObservable(source.pipe(debounceByKey({ key, superseded, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('reports a burst of one once, and a value after the window closed is a new leading edge', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 299ms b 299ms |', values);
      const subs = '       ^ 599ms !';
      const expected = '   a 299ms b 299ms |';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, superseded, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('slides the deadline with every arrival: a burst that never goes quiet holds its trailing value', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 199ms b 199ms c 199ms d 499ms |', values);
      const subs = '       ^ 1099ms !';
      const expected = '   a 399ms B 199ms C 249ms d 249ms |';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, superseded, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('does not emit a superseded value when `superseded` is absent', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 199ms b 199ms c 199ms d 499ms |', values);
      const subs = '       ^ 1099ms !';
      const expected = '   a 849ms d 249ms |';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('does not emit a superseded value for which `superseded` returns undefined', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 199ms b 199ms c 199ms d 499ms |', values);
      const subs = '       ^ 1099ms !';
      const expected = '   a 599ms C 249ms d 249ms |';
      const onlySome = (v: string): string | undefined => (v === 'x2' ? undefined : v.toUpperCase());
      expectObservable(source.pipe(debounceByKey({ key, window: 250, superseded: onlySome, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('keeps one window per key, and a closed window leaves no timer armed', () => {
    const clock = tracking(ts);
    let armedAt450 = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 49ms p 49ms b 49ms q 349ms |', values);
      const subs = '       ^ 499ms !';
      const expected = '   a 49ms p 299ms b 49ms q 99ms |';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, scheduler: clock.scheduler }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAt450 = clock.armed()), 450);
    });
    expect(armedAt450).toBe(0);
  });

  it('lets a non-collapsible value flush its key (held value first) and then pass', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 49ms b 49ms n    49ms c 399ms |', values);
      const subs = '       ^ 549ms !';
      const expected = '   a 99ms (bn) 46ms c 399ms |';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, collapsible, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('closes an open window that holds nothing when a non-collapsible value arrives', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      // Without the close, b would be held until 400 ms instead of leading at 150 ms.
      const source = cold('n 49ms a 49ms n 49ms b 299ms |', values);
      const subs = '       ^ 449ms !';
      const expected = '   n 49ms a 49ms n 49ms b 299ms |';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, collapsible, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('passes a value whose key is undefined straight through, touching no window', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 49ms u 49ms b 49ms u 349ms |', values);
      const subs = '       ^ 499ms !';
      const expected = '   a 49ms u 99ms u 199ms b 149ms |';
      const marksUndefinedKeys = (v: string): string => (v.startsWith('_') ? 'bug' : v);
      expectObservable(source.pipe(debounceByKey({ key, window: 250, superseded: marksUndefinedKeys, scheduler: ts }))).toBe(
        expected,
        values,
      );
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('flushes held values on completion in the order their windows were opened, then completes', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      // x opens before y, so x2 goes before y2 although y2 arrived first.
      const source = cold('a 9ms p 9ms q 9ms b 9ms |', values);
      const subs = '       ^ 39ms !';
      const expected = '   a 9ms p 29ms (bq|)';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it("counts a reopened window from when it reopened, not from the key's first window", () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      // x's first window closes empty at 250 ms; x3 reopens it at 300 ms, after y's opened at 100 ms.
      const source = cold('a 99ms p 199ms c 9ms d 9ms q 9ms |', values);
      const subs = '       ^ 329ms !';
      const expected = '   a 99ms p 199ms c 29ms (qd|)';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, scheduler: ts }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('errors at once on a source error, losing what it held', () => {
    const clock = tracking(ts);
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 49ms b 49ms #', values);
      const subs = '       ^ 99ms !';
      const expected = '   a 99ms #';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, scheduler: clock.scheduler }))).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAfter = clock.armed()), 101);
    });
    expect(armedAfter).toBe(0);
  });

  it('cancels every window timer when unsubscribed, dropping held values', () => {
    const clock = tracking(ts);
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 49ms p 49ms b 49ms q 499ms |', values);
      const unsub = '      ^ 199ms !';
      const subs = '       ^ 199ms !';
      const expected = '   a 49ms p';
      expectObservable(source.pipe(debounceByKey({ key, window: 250, scheduler: clock.scheduler })), unsub).toBe(expected, values);
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAfter = clock.armed()), 201);
    });
    expect(armedAfter).toBe(0);
  });

  it('errors the output and unsubscribes the source when `key` throws', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const boom = new Error('bad key');
      const throwing = (v: string): string => {
        if (v === 'x2') throw boom;
        return v[0];
      };
      const source = cold('a 49ms b 49ms |', values);
      const subs = '       ^ 49ms !';
      const expected = '   a 49ms #';
      expectObservable(source.pipe(debounceByKey({ key: throwing, scheduler: ts }))).toBe(expected, values, boom);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('errors the output when `superseded` throws', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const boom = new Error('bad mark');
      const source = cold('a 9ms b 9ms c 9ms |', values);
      const subs = '       ^ 19ms !';
      const expected = '   a 19ms #';
      const throwing = (): string => {
        throw boom;
      };
      expectObservable(source.pipe(debounceByKey({ key, superseded: throwing, scheduler: ts }))).toBe(expected, values, boom);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('says in its type what a superseded value goes out as: a mark of a type of its own is part of the output', () => {
    interface Event {
      subject: string;
      n: number;
    }
    const events: Record<string, Event> = { a: { subject: 's', n: 1 }, b: { subject: 's', n: 2 }, c: { subject: 's', n: 3 } };
    ts.run(({ cold, expectObservable }) => {
      const source = cold('abc----|', events);
      // The output is Observable<Event | Event & { dropped: 'debounce' }>: `dropped` needs no cast to be read.
      const out: Observable<Event | (Event & { dropped: 'debounce' })> = source.pipe(
        debounceByKey({
          key: (e) => e.subject,
          window: 3,
          superseded: (e) => ({ ...e, dropped: 'debounce' as const }),
          scheduler: ts,
        }),
      );
      const marks = out.pipe(map((e) => ('dropped' in e ? `${e.n}:${e.dropped}` : `${e.n}`)));
      expectObservable(marks).toBe('a-b--c-|', { a: '1', b: '2:debounce', c: '3' });
    });
  });
});
