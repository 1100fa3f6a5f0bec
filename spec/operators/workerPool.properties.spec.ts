import fc from 'fast-check';
import { Observable, map, merge, mergeMap, of, tap, throwError, timer } from 'rxjs';
import { Outcome, workDone, workFailed, workerPool } from '@rxfleet/operators';
import { TestTicket } from '@rxfleet/operators/testing';
import { newScheduler } from '../helpers/marbles';

/** One ticket of a generated run: when it arrives, whether it went stale, and how its work ends. */
interface Plan {
  gap: number;
  stale: boolean;
  duration: number;
  ending: 'done' | 'failed' | 'error' | 'delayed';
}

const plan: fc.Arbitrary<Plan> = fc.record({
  gap: fc.integer({ min: 0, max: 3 }),
  // One ticket in ten went stale while it waited.
  stale: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
  // 0 is work that answers synchronously.
  duration: fc.integer({ min: 0, max: 6 }),
  ending: fc.constantFrom('done', 'failed', 'error', 'delayed'),
});

/** A ticket that also writes its starts into one log shared by the run, to check their order. */
class LoggedTicket extends TestTicket<number> {
  constructor(
    index: number,
    stale: boolean,
    private readonly log: number[],
  ) {
    super(index, { stale });
  }

  override start(): boolean {
    this.log.push(this.name);
    return super.start();
  }
}

describe('workerPool: properties', () => {
  it('never runs more than `concurrency` at once, starts in arrival order, and frees each ticket it took exactly once', () => {
    fc.assert(
      fc.property(
        fc.array(plan, { minLength: 1, maxLength: 30 }),
        fc.integer({ min: 1, max: 4 }),
        fc.option(fc.integer({ min: 0, max: 60 }), { nil: undefined }),
        (plans, concurrency, unsubscribeAt) => {
          const scheduler = newScheduler();
          const starts: number[] = [];
          const received = new Set<number>();
          let active = 0;
          let most = 0;
          let completed = false;
          const results: number[] = [];
          const tickets = plans.map((p, i) => new LoggedTicket(i, p.stale, starts));
          scheduler.run(({ expectObservable }) => {
            let at = 0;
            const source = merge(...plans.map((p, i) => timer((at += p.gap)).pipe(map(() => tickets[i])))).pipe(
              tap((t) => received.add(t.name)),
            );
            const work = (t: LoggedTicket): Observable<Outcome<number>> => {
              const p = plans[t.name];
              const ending: Observable<Outcome<number>> =
                p.ending === 'error'
                  ? throwError(() => new Error('work failed'))
                  : of(
                      p.ending === 'failed'
                        ? workFailed(new Error('no'))
                        : workDone(t.name, p.ending === 'delayed' ? { freeAfter: 5 } : {}),
                    );
              const answer = p.duration === 0 ? ending : timer(p.duration).pipe(mergeMap(() => ending));
              return new Observable<Outcome<number>>((subscriber) => {
                most = Math.max(most, ++active);
                const inner = answer.subscribe(subscriber);
                return () => {
                  active--;
                  inner.unsubscribe();
                };
              });
            };
            const result = source.pipe(
              workerPool({ concurrency, work, scheduler }),
              tap({ next: (r) => results.push(r.ticket.name), complete: () => (completed = true) }),
            );
            // expectObservable subscribes (and unsubscribes at the mark, if any) in virtual time.
            expectObservable(result, unsubscribeAt === undefined ? undefined : `${unsubscribeAt}ms !`);
          });

          expect(most).toBeLessThanOrEqual(concurrency);
          expect(active).toBe(0);
          // First come, first served: start() is called in arrival order, without gaps.
          expect(starts).toEqual([...starts].sort((a, b) => a - b));
          expect(starts).toEqual(starts.map((_, i) => i));
          for (const t of tickets) {
            const took = received.has(t.name);
            // Every ticket the pool received is freed exactly once, unless it was found stale.
            expect([t.name, t.frees]).toEqual([t.name, took && !t.events.some((e) => e.event === 'skip') ? 1 : 0]);
          }
          if (unsubscribeAt === undefined) {
            expect(completed).toBe(true);
            expect([...results].sort((a, b) => a - b)).toEqual(tickets.map((t) => t.name));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
