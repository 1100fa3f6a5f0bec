import fc from 'fast-check';
import { Subject, map, merge, take, timer } from 'rxjs';
import { Settling, TRASH, releaseInOrder } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// The rxjs contract cases releaseInOrder.settling.spec.ts does not already cover, and its invariant.

/** A value answered by whoever holds it, at a time the test chooses; it remembers every callback it was given. */
class Pending implements Settling<string> {
  readonly tells: ((answer: string | typeof TRASH) => void)[] = [];

  constructor(readonly name: string) {}

  whenSettled(tell: (answer: string | typeof TRASH) => void): void {
    this.tells.push(tell);
  }

  settle(answer: string | typeof TRASH): void {
    for (const tell of this.tells) tell(answer);
  }
}

describe('releaseInOrder, values that settle themselves: the rxjs contract', () => {
  failOnUnhandledErrors();

  it('`whenSettled` throwing errors the output and unsubscribes the source and the drain; later settlements change nothing', () => {
    const scheduler = newScheduler();
    const boom = new Error('broken');
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const a = new Pending('a');
      const broken: Settling<string> = {
        whenSettled: () => {
          throw boom;
        },
      };
      const source = cold('a-b---|', { a, b: broken });
      const drain = hot('-------x');
      scheduler.schedule(() => a.settle('A'), 4);
      expectObservable(source.pipe(releaseInOrder<Settling<string>>({ drain }))).toBe('--#', undefined, boom);
      expectSubscriptions(source.subscriptions).toBe('^-!');
      expectSubscriptions(drain.subscriptions).toBe('^-!');
    });
  });

  it('a source error errors at once with values still unsettled; their settlements after it change nothing', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const values = { a: new Pending('a'), b: new Pending('b') };
      scheduler.schedule(() => values.b.settle('B'), 1);
      scheduler.schedule(() => values.a.settle('A'), 4);
      expectObservable(cold('ab-#', values).pipe(releaseInOrder<Pending>())).toBe('---#');
    });
  });

  it('unsubscribing downstream (take) unsubscribes the source and the drain; later settlements change nothing', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const values = { a: new Pending('a'), b: new Pending('b'), c: new Pending('c') };
      scheduler.schedule(() => values.a.settle('A'), 2);
      scheduler.schedule(() => values.c.settle('C'), 3);
      scheduler.schedule(() => values.b.settle('B'), 4);
      const source = cold('abc-----|', values);
      const drain = hot('---------x');
      expectObservable(source.pipe(releaseInOrder<Pending>({ drain }), take(1))).toBe('--(A|)');
      expectSubscriptions(source.subscriptions).toBe('^-!');
      expectSubscriptions(drain.subscriptions).toBe('^-!');
    });
  });

  it('a drain that errors errors the output; one that completes without a value changes nothing', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const a = new Pending('a');
      scheduler.schedule(() => a.settle('A'), 3);
      expectObservable(cold('a----|', { a }).pipe(releaseInOrder<Pending>({ drain: cold('-#') }))).toBe('-#');
      const b = new Pending('b');
      scheduler.schedule(() => b.settle('B'), 3);
      expectObservable(cold('b----|', { b }).pipe(releaseInOrder<Pending>({ drain: cold('-|') }))).toBe('---B-|', { B: 'B' });
    });
  });

  it('a value settled from inside `whenSettled` (synchronously) leaves as soon as everything ahead of it has', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const now = (answer: string): Settling<string> => ({ whenSettled: (tell) => tell(answer) });
      const late = new Pending('late');
      scheduler.schedule(() => late.settle('L'), 2);
      expectObservable(cold('ab(c|)', { a: now('A'), b: late, c: now('C') }).pipe(releaseInOrder<Settling<string>>())).toBe('a-(bc|)', {
        a: 'A',
        b: 'L',
        c: 'C',
      });
    });
  });
});

describe('releaseInOrder, values that settle themselves: properties', () => {
  it('never reorders: whatever order the values settle in, they leave in arrival order, trashed ones skipped', () => {
    const plan = fc.record({
      gap: fc.integer({ min: 0, max: 3 }),
      // 0 settles inside whenSettled.
      delay: fc.integer({ min: 0, max: 12 }),
      trash: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
    });
    fc.assert(
      fc.property(fc.array(plan, { minLength: 1, maxLength: 40 }), (plans) => {
        const scheduler = newScheduler();
        const out: string[] = [];
        let completed = false;
        scheduler.run(() => {
          let at = 0;
          const values = plans.map((p, i): Settling<string> => ({
            whenSettled: (tell) => {
              const answer = p.trash ? TRASH : `v${i}`;
              if (p.delay === 0) tell(answer);
              else scheduler.schedule(() => tell(answer), p.delay);
            },
          }));
          merge(...plans.map((p, i) => timer((at += p.gap)).pipe(map(() => values[i]))))
            .pipe(releaseInOrder<Settling<string>>())
            .subscribe({ next: (v) => out.push(v as string), complete: () => (completed = true) });
        });
        expect(completed).toBe(true);
        expect(out).toEqual(plans.flatMap((p, i) => (p.trash ? [] : [`v${i}`])));
      }),
      { numRuns: 300 },
    );
  });

  it('runs a synchronous feedback loop of 100,000 values flat', () => {
    const source = new Subject<Settling<number>>();
    let last = -1;
    source.pipe(releaseInOrder<Settling<number>>()).subscribe((n) => {
      last = n as number;
      if (last < 100_000) source.next({ whenSettled: (tell) => tell(last + 1) });
    });
    source.next({ whenSettled: (tell) => tell(0) });
    expect(last).toBe(100_000);
  });
});
