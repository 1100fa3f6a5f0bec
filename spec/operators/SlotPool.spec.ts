import { Observable, of } from 'rxjs';
import { SlotPool, withSlot } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';

describe('SlotPool and withSlot', () => {
  it('runs at most `size` pieces of work at once; the rest wait in the order they subscribed', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const pool = new SlotPool(2);
      const a = cold('---a|');
      const b = cold('-b|');
      const c = cold('--c|');
      const d = cold('d|');
      expectObservable(a.pipe(withSlot(pool))).toBe('---a|');
      expectObservable(b.pipe(withSlot(pool))).toBe('-b|');
      expectObservable(c.pipe(withSlot(pool))).toBe('----c|');
      expectObservable(d.pipe(withSlot(pool))).toBe('----d|');
      expectSubscriptions(c.subscriptions).toBe('--^--!');
      expectSubscriptions(d.subscriptions).toBe('----^!');
    });
  });

  it('gives the slot back on error and on unsubscribe; a waiter unsubscribed leaves the line without running', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const pool = new SlotPool(1);
      const failing = cold('--#');
      const abandoned = cold('-----x');
      const skipped = cold('y|');
      const last = cold('z|');
      expectObservable(failing.pipe(withSlot(pool))).toBe('--#');
      expectObservable(abandoned.pipe(withSlot(pool)), '^---!').toBe('-----');
      expectObservable(skipped.pipe(withSlot(pool)), '^-!').toBe('---');
      expectObservable(last.pipe(withSlot(pool))).toBe('----z|');
      expectSubscriptions(abandoned.subscriptions).toBe('--^-!');
      expectSubscriptions(skipped.subscriptions).toBe([]);
      expectSubscriptions(last.subscriptions).toBe('----^!');
    });
  });

  it('counts work running and waiting; hands slots on in order, without recursion, to work that answers at once', () => {
    const pool = new SlotPool(1);
    const order: number[] = [];
    const held = pool.run(() => new Observable<never>()).subscribe();
    // Deep enough that handing the slot on recursively would overflow the stack.
    for (let i = 0; i < 20_000; i++) pool.run(() => of(i)).subscribe((n) => order.push(n));
    expect([pool.busy, pool.waiting, order.length]).toEqual([1, 20_000, 0]);
    held.unsubscribe();
    expect(order).toEqual(Array.from({ length: 20_000 }, (_, i) => i));
    expect([pool.busy, pool.waiting]).toEqual([0, 0]);
  });

  it('work that throws errors its own subscription and gives its slot back', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const pool = new SlotPool(1);
      const next = cold('n|');
      expectObservable(
        pool.run(() => {
          throw new Error('no work');
        }),
      ).toBe('#', undefined, new Error('no work'));
      expectObservable(next.pipe(withSlot(pool))).toBe('n|');
    });
  });

  it('acquire: the same line without Observables; a claim given back while it waits never starts, one given back while it holds hands the slot on', () => {
    const pool = new SlotPool(1);
    const started: string[] = [];
    const a = pool.acquire(() => started.push('a'));
    const b = pool.acquire(() => started.push('b'));
    pool.acquire((claim) => {
      started.push('c');
      claim.giveBack();
    });
    const d = pool.acquire(() => started.push('d'));
    expect([started, pool.busy, pool.waiting]).toEqual([['a'], 1, 3]);
    b.giveBack();
    a.giveBack();
    a.giveBack();
    expect([started, pool.busy, pool.waiting]).toEqual([['a', 'c', 'd'], 1, 0]);
    d.giveBack();
    expect(pool.busy).toBe(0);
  });

  it('refuses fewer than one slot', () => {
    expect(() => new SlotPool(0)).toThrow(RangeError);
  });
});
