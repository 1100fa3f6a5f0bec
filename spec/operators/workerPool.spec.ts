import { Observable, distinctUntilChanged, map } from 'rxjs';
import { AdmissionLedger, Ticket } from '@rxfleet/operators';
import { admit } from '@rxfleet/operators';
import { Outcome, PoolResult, valueTicket, workDone, workFailed, workerPool } from '@rxfleet/operators';
import { Cold, newScheduler } from '../helpers/marbles';

type T = Ticket<string, string>;

function ledgerFor(scheduler: ReturnType<typeof newScheduler>, capacity = 1000): AdmissionLedger<string, string> {
  return new AdmissionLedger({ key: (v: string) => v, window: 100_000, capacity, scheduler });
}

// Results as short strings, so diagrams stay readable: 'a:done', 'b:failed', 'c:skipped'.
const summary = (r: PoolResult<T, unknown>): string => `${r.ticket.value}:${r.outcome.status}`;

describe('workerPool', () => {
  it('runs at most `concurrency` units at once; waiting tickets start in arrival order', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const ledger = ledgerFor(scheduler);
      const works: Record<string, Cold<Outcome<string>>> = {
        a: cold('---d|', { d: workDone('A') }),
        b: cold(' -d|', { d: workDone('B') }),
        c: cold('  ----d|', { d: workDone('C') }),
        d: cold('   -d|', { d: workDone('D') }),
      };
      const source = cold('abcd-----|');
      const result = source.pipe(admit(ledger), workerPool({ concurrency: 2, work: (t) => works[t.value] }), map(summary));
      // b frees a worker at 2 for c; a frees one at 3 for d, which had waited since 3 too.
      expectObservable(result).toBe('--bad-c--|', { a: 'a:done', b: 'b:done', c: 'c:done', d: 'd:done' });
      expectSubscriptions(works.a.subscriptions).toBe('^--!');
      expectSubscriptions(works.b.subscriptions).toBe('-^!');
      expectSubscriptions(works.c.subscriptions).toBe('--^---!');
      expectSubscriptions(works.d.subscriptions).toBe('---^!');
      expectSubscriptions(source.subscriptions).toBe('^--------!');
    });
  });

  it('skips a ticket that went stale while it waited, without running its work', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const ledger = ledgerFor(scheduler);
      const a = cold('----d|', { d: workDone('A') });
      const b = cold('d|', { d: workDone('B') });
      const c = cold('d|', { d: workDone('C') });
      const works: Record<string, Observable<Outcome<string>>> = { a, b, c };
      const source = cold('ab-c-------|');
      const reset = hot('  --r---------');
      const result = source.pipe(admit(ledger, { reset }), workerPool({ concurrency: 1, work: (t) => works[t.value] }), map(summary));
      // The reset at 2 makes a (running) and b (waiting) stale; a's work is already running and
      // finishes; b is skipped when the worker reaches it; c was admitted after the reset.
      expectObservable(result).toBe('----(abc)--|', { a: 'a:done', b: 'b:skipped', c: 'c:done' });
      expectSubscriptions(b.subscriptions).toBe([]);
      expectSubscriptions(c.subscriptions).toBe('----(^!)');
    });
  });

  it('frees a key at once after a failure or a plain done, and only after the delay for done-after', () => {
    const scheduler = newScheduler();
    const held: Array<[number, number]> = [];
    scheduler.run(({ cold, expectObservable }) => {
      const ledger = ledgerFor(scheduler);
      ledger.sizes$
        .pipe(
          map((s) => s.held),
          distinctUntilChanged(),
        )
        .subscribe((n) => held.push([scheduler.now(), n]));
      const works: Record<string, Observable<Outcome<string>>> = {
        a: cold('-f', { f: workFailed(new Error('boom')) }),
        b: cold('--d', { d: workDone('B') }),
        c: cold('---d', { d: workDone('C', { freeAfter: 5 }) }),
      };
      const source = cold('abc----------|');
      const result = source.pipe(admit(ledger), workerPool({ concurrency: 3, work: (t) => works[t.value] }), map(summary));
      expectObservable(result).toBe('-a-b-c-------|', { a: 'a:failed', b: 'b:done', c: 'c:done' });
    });
    // a is freed when it fails (1), b when it is done (3), c five frames after it is done (5 + 5).
    expect(held).toEqual([
      [0, 0],
      [0, 1],
      [1, 2],
      [1, 1],
      [2, 2],
      [3, 1],
      [10, 0],
    ]);
  });

  it('turns a work error or a work that completes silently into a failed outcome', () => {
    const scheduler = newScheduler();
    const outcomes: Array<Outcome<string> | { status: 'skipped' }> = [];
    scheduler.run(({ cold, expectObservable }) => {
      const ledger = ledgerFor(scheduler);
      const works: Record<string, Observable<Outcome<string>>> = {
        a: cold('-#', undefined, new Error('read failed')),
        b: cold('--|'),
      };
      const source = cold('ab---|');
      const result = source.pipe(
        admit(ledger),
        workerPool({ concurrency: 2, work: (t) => works[t.value] }),
        map((r) => {
          outcomes.push(r.outcome);
          return summary(r);
        }),
      );
      expectObservable(result).toBe('-a-b-|', { a: 'a:failed', b: 'b:failed' });
    });
    expect(outcomes).toEqual([
      { status: 'failed', error: new Error('read failed') },
      { status: 'failed', error: new Error('work completed without an outcome') },
    ]);
  });

  it('a work factory that throws is a failed outcome, not an error of the pool', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const ledger = ledgerFor(scheduler);
      const source = cold('a|');
      const result = source.pipe(
        admit(ledger),
        workerPool<T, string>({
          concurrency: 1,
          work: () => {
            throw new Error('no work for you');
          },
        }),
        map(summary),
      );
      expectObservable(result).toBe('a|', { a: 'a:failed' });
    });
  });

  it('reports the number of busy workers after every change', () => {
    const scheduler = newScheduler();
    const busy: Array<[number, number]> = [];
    scheduler.run(({ cold, expectObservable }) => {
      const ledger = ledgerFor(scheduler);
      const works: Record<string, Observable<Outcome<string>>> = {
        a: cold('--d', { d: workDone('A') }),
        b: cold('---d', { d: workDone('B') }),
        c: cold('-d', { d: workDone('C') }),
      };
      const source = cold('abc----|');
      const result = source.pipe(
        admit(ledger),
        workerPool({ concurrency: 2, work: (t) => works[t.value], onBusy: (n) => busy.push([scheduler.now(), n]) }),
        map(summary),
      );
      expectObservable(result).toBe('--acb--|', { a: 'a:done', b: 'b:done', c: 'c:done' });
    });
    // a starts at 0 and b at 1; a ends at 2 and c takes its worker; c ends at 3, b at 4.
    expect(busy).toEqual([
      [0, 1],
      [1, 2],
      [2, 1],
      [2, 2],
      [3, 1],
      [4, 0],
    ]);
  });

  it('completes only when the source has completed and every unit of work has ended', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const ledger = ledgerFor(scheduler);
      const source = cold('ab|');
      const result = source.pipe(
        admit(ledger),
        workerPool({ concurrency: 1, work: () => cold('---d', { d: workDone('x') }) }),
        map(summary),
      );
      expectObservable(result).toBe('---a--(b|)', { a: 'a:done', b: 'b:done' });
    });
  });

  it('errors at once on a source error, tearing down running work and freeing what it held', () => {
    const scheduler = newScheduler();
    let ledger!: AdmissionLedger<string, string>;
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      ledger = ledgerFor(scheduler);
      const work = cold('-----d', { d: workDone('x') });
      const source = cold('ab-#');
      const result = source.pipe(admit(ledger), workerPool({ concurrency: 1, work: () => work }), map(summary));
      expectObservable(result).toBe('---#');
      expectSubscriptions(work.subscriptions).toBe('^--!');
    });
    expect(ledger.held).toBe(0);
    expect(ledger.queued).toBe(0);
  });

  it('unsubscribing unsubscribes running work, cancels delayed frees and frees every ticket held', () => {
    const scheduler = newScheduler();
    let ledger!: AdmissionLedger<string, string>;
    const busy: number[] = [];
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      ledger = ledgerFor(scheduler);
      const works: Record<string, Observable<Outcome<string>>> = {
        a: cold('d', { d: workDone('A', { freeAfter: 50 }) }),
        b: cold('------d', { d: workDone('B') }),
        c: cold('d', { d: workDone('C') }),
      };
      const source = cold('abc-------|');
      const result = source.pipe(
        admit(ledger),
        workerPool({ concurrency: 1, work: (t) => works[t.value], onBusy: (n) => busy.push(n) }),
        map(summary),
      );
      expectObservable(result, '----!').toBe('a---', { a: 'a:done' });
      expectSubscriptions((works.b as Cold<Outcome<string>>).subscriptions).toBe('-^--!');
      expectSubscriptions((works.c as Cold<Outcome<string>>).subscriptions).toBe([]);
      expectSubscriptions(source.subscriptions).toBe('^---!');
    });
    // a waited out a delayed free, b was running, c was waiting: all freed, no timer left.
    expect(ledger.held).toBe(0);
    expect(ledger.queued).toBe(0);
    expect(busy.at(-1)).toBe(0);
  });

  it('tells a ticket freed later that it is holding, and one freed now nothing', () => {
    const scheduler = newScheduler();
    const events: string[] = [];
    const ticket = (name: string) => ({
      name,
      start: () => true,
      hold: () => events.push(`${name}:hold@${scheduler.now()}`),
      free: () => events.push(`${name}:free@${scheduler.now()}`),
    });
    scheduler.run(({ cold, expectObservable }) => {
      const source = cold('ab', { a: ticket('a'), b: ticket('b') });
      const result = source.pipe(
        workerPool({ concurrency: 2, work: (t) => cold('-d', { d: workDone(t.name, t.name === 'a' ? { freeAfter: 3 } : {}) }) }),
        map((r) => r.ticket.name),
      );
      expectObservable(result).toBe('-ab');
    });
    expect(events).toEqual(['a:hold@1', 'b:free@2', 'a:free@4']);
  });

  it('works with any ticket that can start and free, and no delayed free fires after teardown', () => {
    const scheduler = newScheduler();
    const frees: Array<[string, number]> = [];
    const ticket = (name: string) => ({ name, start: () => true, free: () => frees.push([name, scheduler.now()]) });
    scheduler.run(({ cold, expectObservable }) => {
      const tickets = { a: ticket('a'), b: ticket('b') };
      const source = cold('ab----', tickets);
      const result = source.pipe(
        workerPool({ concurrency: 2, work: (t) => cold('-d', { d: workDone(t.name, { freeAfter: t.name === 'a' ? 2 : 20 }) }) }),
        map((r) => r.ticket.name),
      );
      expectObservable(result, '-----!').toBe('-ab---');
    });
    // a's delay ran out at 3; b's would have at 22, but teardown at 5 freed it and cancelled the timer.
    expect(frees).toEqual([
      ['a', 3],
      ['b', 5],
    ]);
  });

  it('drains a deep queue of synchronous work without overflowing the stack', () => {
    const scheduler = newScheduler();
    const ledger = new AdmissionLedger({ key: (v: number) => v, window: 1, capacity: 200_000, scheduler });
    const tickets = Array.from({ length: 100_000 }, (_, i) => {
      const offer = ledger.offer(i);
      if (!offer.admitted) throw new Error('refused');
      return offer.ticket;
    });
    let count = 0;
    let resolveLast: (o: Outcome<number>) => void = () => undefined;
    const source = new Observable<Ticket<number, number>>((s) => {
      tickets.forEach((t) => s.next(t));
      s.complete();
    });
    source
      .pipe(
        workerPool<Ticket<number, number>, number>({
          concurrency: 1,
          // The first unit waits so that every other ticket queues behind it; the rest answer at once.
          work: (t) =>
            t.value === 0
              ? new Observable<Outcome<number>>((s) => {
                  resolveLast = (o) => s.next(o);
                })
              : [workDone(t.value)],
        }),
      )
      .subscribe(() => count++);
    resolveLast(workDone(0));
    expect(count).toBe(100_000);
    expect(ledger.held).toBe(0);
  });

  it('refuses a concurrency below one', () => {
    expect(() => workerPool({ concurrency: 0, work: () => [workDone(1)] })).toThrow(RangeError);
  });

  describe('on plain values, through valueTicket', () => {
    it('runs each value with at most `concurrency` at once, first come first served, and every result carries its value', () => {
      const scheduler = newScheduler();
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const source = cold('abc----|', { a: 'x', b: 'y', c: 'z' });
        const works: Record<string, Cold<Outcome<string>>> = {
          x: cold('--d|', { d: workDone('X') }),
          y: cold('-d|', { d: workDone('Y') }),
          z: cold('d|', { d: workDone('Z') }),
        };
        const result = source.pipe(
          map(valueTicket),
          workerPool({ concurrency: 2, work: (ticket) => works[ticket.value] }),
          map(({ ticket, outcome }) => `${ticket.value}:${outcome.status === 'done' ? outcome.value : outcome.status}`),
        );
        // x and y both end at 2, in the order they started; z, waiting for a worker, takes x's then and answers at once.
        expectObservable(result).toBe('--(xyz)|', { x: 'x:X', y: 'y:Y', z: 'z:Z' });
        expectSubscriptions(works.x.subscriptions).toBe('^-!');
        expectSubscriptions(works.y.subscriptions).toBe('-^!');
        expectSubscriptions(works.z.subscriptions).toBe('--(^!)');
      });
    });

    it('is a ticket that is always current and that freeing or holding leaves as it was', () => {
      const ticket = valueTicket({ id: 7 });
      expect(ticket.start()).toBe(true);
      ticket.hold?.();
      ticket.free();
      expect([ticket.start(), ticket.value]).toEqual([true, { id: 7 }]);
    });
  });
});
