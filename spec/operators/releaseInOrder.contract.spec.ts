import fc from 'fast-check';
import { EMPTY, Observable, OperatorFunction, map, merge, mergeMap, of, take, tap, timer } from 'rxjs';
import { TRASH, releaseInOrder } from '@rxfleet/operators';
import { Cold, newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// The rxjs contract cases releaseInOrder.spec.ts does not already cover, and its invariant.

describe('releaseInOrder: the rxjs contract', () => {
  failOnUnhandledErrors();

  it('a `settle` that returns no ObservableInput errors the output, as one that throws does', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const a = cold('---A|');
      const source = cold('-ab--|');
      const settle = (v: string): Observable<string> => (v === 'a' ? a : (undefined as unknown as Observable<string>));
      expectObservable(source.pipe(releaseInOrder(settle))).toBe('--#', undefined, expect.any(TypeError));
      expectSubscriptions(a.subscriptions).toBe('-^!');
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
  });

  it('unsubscribing downstream (take) unsubscribes the source, the drain and every pending settle', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const settles: Record<string, Cold<string>> = { a: cold('-A|'), b: cold('----B|'), c: cold('-C|') };
      const drain = hot('---------x');
      const source = cold('abc-----|');
      const result = source.pipe(
        releaseInOrder((v: string) => settles[v], { drain }),
        take(1),
      );
      expectObservable(result).toBe('-(A|)');
      expectSubscriptions(source.subscriptions).toBe('^!');
      expectSubscriptions(drain.subscriptions).toBe('^!');
      // b arrived in the very frame A left (the source's value first), and was let go at once.
      expectSubscriptions(settles.b.subscriptions).toBe('-(^!)');
      expectSubscriptions(settles.c.subscriptions).toBe([]);
    });
  });

  it('synchronous settles answer before the next value; an array answers with its first element, EMPTY trashes', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const source = cold('abcd|');
      const settle = (v: string): Observable<string | typeof TRASH> | string[] =>
        v === 'a' ? [`${v}1`, `${v}2`] : v === 'b' ? of(TRASH) : v === 'c' ? EMPTY : of(v.toUpperCase());
      expectObservable(source.pipe(releaseInOrder(settle))).toBe('x--D|', { x: 'a1', D: 'D' });
    });
  });

  it('without `drain`, its type is OperatorFunction<T, R>: answers only', () => {
    const lengths: OperatorFunction<string, number> = releaseInOrder((v: string) => of(v.length));
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      expectObservable(cold('ab|', { a: 'x', b: 'yy' }).pipe(lengths)).toBe('ab|', { a: 1, b: 2 });
    });
  });
});

describe('releaseInOrder: properties', () => {
  it('never reorders: whatever order the answers land in, they leave in arrival order, trashed ones skipped', () => {
    const answer = fc.record({
      gap: fc.integer({ min: 0, max: 3 }),
      // 0 settles synchronously.
      delay: fc.integer({ min: 0, max: 12 }),
      kind: fc.constantFrom('answer', 'answer', 'trash', 'empty'),
    });
    fc.assert(
      fc.property(fc.array(answer, { minLength: 1, maxLength: 40 }), (plans) => {
        const scheduler = newScheduler();
        const out: number[] = [];
        let completed = false;
        scheduler.run(({ expectObservable }) => {
          let at = 0;
          const source = merge(...plans.map((p, i) => timer((at += p.gap)).pipe(map(() => i))));
          const settle = (i: number): Observable<number | typeof TRASH> => {
            const p = plans[i];
            const value$: Observable<number | typeof TRASH> = p.kind === 'answer' ? of(i * 10) : p.kind === 'trash' ? of(TRASH) : EMPTY;
            return p.delay === 0 ? value$ : timer(p.delay).pipe(mergeMap(() => value$));
          };
          expectObservable(source.pipe(releaseInOrder(settle), tap({ next: (v) => out.push(v), complete: () => (completed = true) })));
        });
        expect(completed).toBe(true);
        expect(out).toEqual(plans.flatMap((p, i) => (p.kind === 'answer' ? [i * 10] : [])));
      }),
      { numRuns: 300 },
    );
  });
});
