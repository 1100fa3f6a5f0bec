import { SchedulerAction, SchedulerLike, Subject, Subscription, of } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { Outcome, workDone, workerPool } from '@rxfleet/operators';
import { TestTicket, trackingScheduler } from '@rxfleet/operators/testing';
import { newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// workerPool's delayed frees share one timer per distinct delay (what lib/provision's
// batchedDelays did from outside the pool, before it moved into it).

/** The test scheduler, counting every timer asked of it. */
function counting(ts: TestScheduler): { scheduler: SchedulerLike; made: () => number } {
  let made = 0;
  return {
    scheduler: {
      now: () => ts.now(),
      schedule: <S>(work: (this: SchedulerAction<S>, state?: S) => void, delay?: number, state?: S): Subscription => {
        made++;
        return ts.schedule(work, delay, state);
      },
    },
    made: () => made,
  };
}

const freedAt = (t: TestTicket<unknown>): number[] => t.events.filter((e) => e.event === 'free').map((e) => e.at);

describe('workerPool: delayed frees', () => {
  failOnUnhandledErrors();

  it('frees each ticket at its own delay, in order per delay, with one timer per distinct delay armed at a time', () => {
    const ts = newScheduler();
    const now = (): number => ts.now();
    const tickets = {
      a: new TestTicket('a', { now }),
      b: new TestTicket('b', { now }),
      c: new TestTicket('c', { now }),
      x: new TestTicket('x', { now }),
    };
    const timers = trackingScheduler(ts);
    ts.run(({ hot }) => {
      const delays: Record<string, number> = { a: 10, b: 10, c: 10, x: 25 };
      const source = hot('x--b(ac)', tickets);
      source
        .pipe(workerPool({ concurrency: 4, work: (t) => of(workDone(t.name, { freeAfter: delays[t.name] })), scheduler: timers.scheduler }))
        .subscribe();
      ts.schedule(() => expect(timers.armed()).toBe(2), 5);
    });
    expect([tickets.x, tickets.b, tickets.a, tickets.c].map(freedAt)).toEqual([[25], [13], [14], [14]]);
    expect(timers.armed()).toBe(0);
  });

  it('a thousand tickets held for one delay cost one timer', () => {
    const ts = newScheduler();
    const tickets = Array.from({ length: 1000 }, (_, i) => new TestTicket(i));
    const { scheduler, made } = counting(ts);
    ts.run(() => {
      const source = new Subject<TestTicket<number>>();
      source.pipe(workerPool({ concurrency: 16, work: () => of(workDone(0, { freeAfter: 60 })), scheduler })).subscribe();
      for (const t of tickets) source.next(t);
    });
    expect(tickets.every((t) => t.frees === 1)).toBe(true);
    expect(made()).toBe(1);
  });

  it('a ticket held from inside a free (work ended by a free, same delay) is freed at its own time; no timer survives', () => {
    const ts = newScheduler();
    const now = (): number => ts.now();
    const timers = trackingScheduler(ts);
    const source = new Subject<TestTicket>();
    const first = new TestTicket('first', { now });
    const second = new TestTicket('second', { now });
    const chained = Object.assign(first, {
      free: (): void => {
        TestTicket.prototype.free.call(first);
        source.next(second);
      },
    });
    ts.run(() => {
      source
        .pipe(workerPool({ concurrency: 1, work: (): Outcome<number>[] => [workDone(0, { freeAfter: 10 })], scheduler: timers.scheduler }))
        .subscribe();
      ts.schedule(() => source.next(chained), 0);
      ts.schedule(() => source.complete(), 30);
    });
    expect([freedAt(first), freedAt(second)]).toEqual([[10], [20]]);
    expect(timers.armed()).toBe(0);
  });

  it('tickets held for many distinct delays are each freed once, and completion frees those still held at once', () => {
    const ts = newScheduler();
    const now = (): number => ts.now();
    const timers = trackingScheduler(ts);
    const tickets = Array.from({ length: 20 }, (_, i) => new TestTicket(i, { now }));
    ts.run(() => {
      const source = new Subject<TestTicket<number>>();
      source
        .pipe(workerPool({ concurrency: 20, work: (t) => of(workDone(0, { freeAfter: 1 + t.name })), scheduler: timers.scheduler }))
        .subscribe();
      for (const t of tickets) source.next(t);
      ts.schedule(() => source.complete(), 15);
    });
    // Delays 1 to 20 ms; the source completes at 15, tearing the pool down: 15 to 20 go then.
    expect(tickets.map(freedAt)).toEqual(tickets.map((t) => [Math.min(1 + t.name, 15)]));
    expect(timers.armed()).toBe(0);
  });
});
