import { Observable, Subject, of, take } from 'rxjs';
import { SlotPool, withSlot } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// The rxjs contract for withSlot and SlotPool.run, case by case, and the core's (acquire) rules
// for a start that throws.

describe('SlotPool and withSlot: the rxjs contract', () => {
  failOnUnhandledErrors();

  it("behaves as its doc comments' diagrams say (SlotPool.run and withSlot)", () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const pool = new SlotPool(1);
      const a = cold('-a|');
      const b = cold('-b|');
      expectObservable(pool.run(() => a)).toBe('-a|');
      expectObservable(pool.run(() => b)).toBe('---b|');
      expectSubscriptions(a.subscriptions).toBe('^-!');
      expectSubscriptions(b.subscriptions).toBe('--^-!');
    });
    newScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const pool = new SlotPool(1);
      const a = cold('-a|');
      const b = cold('-b|');
      expectObservable(a.pipe(withSlot(pool))).toBe('-a|');
      expectObservable(b.pipe(withSlot(pool))).toBe('---b|');
      expectSubscriptions(b.subscriptions).toBe('--^-!');
    });
  });

  describe('a callback that throws', () => {
    it('`work` throwing, or returning no ObservableInput, errors that subscription and hands its slot on in the same frame', () => {
      const scheduler = newScheduler();
      const boom = new Error('no work');
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const pool = new SlotPool(1);
        const first = cold('--x|');
        const last = cold('(y|)');
        expectObservable(first.pipe(withSlot(pool))).toBe('--x|');
        expectObservable(
          pool.run(() => {
            throw boom;
          }),
        ).toBe('---#', undefined, boom);
        expectObservable(pool.run(() => undefined as unknown as Observable<string>)).toBe('---#', undefined, expect.any(TypeError));
        expectObservable(last.pipe(withSlot(pool))).toBe('---(y|)');
        expectSubscriptions(last.subscriptions).toBe('---(^!)');
      });
    });

    it('a `start` that throws has not taken its slot: the line is served on, and the error comes out of the call that granted it', () => {
      const pool = new SlotPool(1);
      const started: string[] = [];
      const boom = new Error('start broke');
      expect(() =>
        pool.acquire(() => {
          throw boom;
        }),
      ).toThrow(boom);
      expect([pool.busy, pool.waiting]).toEqual([0, 0]);
      const holder = pool.acquire(() => started.push('holder'));
      pool.acquire(() => {
        started.push('thrower');
        throw boom;
      });
      pool.acquire(() => started.push('after'));
      // Releasing the holder grants the thrower, whose slot goes straight to the one after it.
      expect(() => holder.giveBack()).toThrow(boom);
      expect(started).toEqual(['holder', 'thrower', 'after']);
      expect([pool.busy, pool.waiting]).toEqual([1, 0]);
    });

    it('several starts throwing in one pass come out together as an AggregateError; none keeps a slot', () => {
      const pool = new SlotPool(1);
      const holder = pool.acquire(() => undefined);
      const errors = [new Error('one'), new Error('two')];
      for (const error of errors) {
        pool.acquire(() => {
          throw error;
        });
      }
      const started: string[] = [];
      pool.acquire(() => started.push('last'));
      let thrown: unknown;
      try {
        holder.giveBack();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(AggregateError);
      expect((thrown as AggregateError).errors).toEqual(errors);
      expect(started).toEqual(['last']);
      expect([pool.busy, pool.waiting]).toEqual([1, 0]);
    });
  });

  describe('source error and completion with work in flight', () => {
    it('a source error gives the slot back before it is passed on: the next waiter is subscribed in that frame', () => {
      const scheduler = newScheduler();
      const boom = new Error('source broke');
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const pool = new SlotPool(1);
        const failing = cold('-x-#', undefined, boom);
        const next = cold('--n|');
        expectObservable(failing.pipe(withSlot(pool))).toBe('-x-#', undefined, boom);
        expectObservable(next.pipe(withSlot(pool))).toBe('-----n|');
        expectSubscriptions(failing.subscriptions).toBe('^--!');
        expectSubscriptions(next.subscriptions).toBe('---^--!');
      });
    });

    it('completion with others waiting hands the slot to the oldest, in arrival order, also work that completes at once', () => {
      const scheduler = newScheduler();
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const pool = new SlotPool(2);
        const a = cold('--a|');
        const b = cold('-b|');
        const c = cold('(c|)');
        const d = cold('(d|)');
        const e = cold('-e|');
        expectObservable(a.pipe(withSlot(pool))).toBe('--a|');
        expectObservable(b.pipe(withSlot(pool))).toBe('-b|');
        expectObservable(c.pipe(withSlot(pool))).toBe('--(c|)');
        expectObservable(d.pipe(withSlot(pool))).toBe('--(d|)');
        expectObservable(e.pipe(withSlot(pool))).toBe('---e|');
        expectSubscriptions(c.subscriptions).toBe('--(^!)');
        expectSubscriptions(d.subscriptions).toBe('--(^!)');
        expectSubscriptions(e.subscriptions).toBe('--^-!');
      });
    });
  });

  it('unsubscribing downstream (take) unsubscribes the work and hands the slot on; a waiter unsubscribed never runs', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const pool = new SlotPool(1);
      const long = cold('-a-b-c|');
      const abandoned = cold('z|');
      const next = cold('(n|)');
      expectObservable(long.pipe(withSlot(pool), take(2))).toBe('-a-(b|)');
      expectObservable(abandoned.pipe(withSlot(pool)), '^-!').toBe('---');
      expectObservable(next.pipe(withSlot(pool))).toBe('---(n|)');
      expectSubscriptions(long.subscriptions).toBe('^--!');
      expectSubscriptions(abandoned.subscriptions).toBe([]);
      expectSubscriptions(next.subscriptions).toBe('---(^!)');
    });
  });

  describe('synchronous and array work', () => {
    it('synchronous work holds its slot while it emits and gives it back before it completes; an array is work too', () => {
      const pool = new SlotPool(1);
      const seen: string[] = [];
      pool
        .run(() => of('a', 'b'))
        .subscribe({ next: (v) => seen.push(`${v}:${pool.busy}`), complete: () => seen.push(`done:${pool.busy}`) });
      pool.run(() => ['c']).subscribe({ next: (v) => seen.push(`${v}:${pool.busy}`), complete: () => seen.push(`done:${pool.busy}`) });
      expect(seen).toEqual(['a:1', 'b:1', 'done:0', 'c:1', 'done:0']);
      expect([pool.busy, pool.waiting]).toEqual([0, 0]);
    });
  });

  it('is first come, first served when fed from inside an emission: work started from a result waits behind work already waiting', () => {
    const pool = new SlotPool(1);
    const first = new Subject<string>();
    const started: string[] = [];
    const run = (name: string, work: () => Observable<string>): void => {
      pool
        .run(() => {
          started.push(name);
          return work();
        })
        .subscribe((v) => {
          // The first result starts more work while b and c wait.
          if (v === 'A') run('d', () => of('D'));
        });
    };
    run('a', () => first.pipe(take(1)));
    run('b', () => of('B'));
    run('c', () => of('C'));
    first.next('A');
    expect(started).toEqual(['a', 'b', 'c', 'd']);
  });
});
