import fc from 'fast-check';
import { Observable, Subscription, mergeMap, of, throwError, timer } from 'rxjs';
import { SlotPool } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';

/** One job of a generated run: when it asks for a slot, how its work ends, and whether it is given up. */
interface Job {
  gap: number;
  // 0 is work that ends synchronously.
  duration: number;
  ending: 'complete' | 'error';
  // Frames after it asked at which it is unsubscribed, if it is.
  giveUpAfter: number | undefined;
}

const job: fc.Arbitrary<Job> = fc.record({
  gap: fc.integer({ min: 0, max: 3 }),
  duration: fc.integer({ min: 0, max: 6 }),
  ending: fc.constantFrom<'complete' | 'error'>('complete', 'complete', 'error'),
  giveUpAfter: fc.option(fc.integer({ min: 0, max: 8 }), { nil: undefined }),
});

describe('SlotPool: properties', () => {
  it('never runs more than `size` at once, starts work first come first served, and leaves no slot taken', () => {
    fc.assert(
      fc.property(fc.array(job, { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 4 }), (jobs, size) => {
        const scheduler = newScheduler();
        const pool = new SlotPool(size);
        const started: number[] = [];
        const ended = new Set<number>();
        const givenUp = new Map<number, number>();
        let running = 0;
        let most = 0;
        scheduler.run(() => {
          let at = 0;
          jobs.forEach((j, i) => {
            at += j.gap;
            const asked = at;
            scheduler.schedule(() => {
              const work = (): Observable<number> => {
                started.push(i);
                const end: Observable<number> = j.ending === 'error' ? throwError(() => new Error('work failed')) : of(i);
                const answer = j.duration === 0 ? end : timer(j.duration).pipe(mergeMap(() => end));
                return new Observable<number>((subscriber) => {
                  most = Math.max(most, ++running);
                  const inner = answer.subscribe(subscriber);
                  return () => {
                    running--;
                    inner.unsubscribe();
                  };
                });
              };
              const subscription: Subscription = pool.run(work).subscribe({ error: () => ended.add(i), complete: () => ended.add(i) });
              if (j.giveUpAfter !== undefined) {
                scheduler.schedule(() => {
                  if (!subscription.closed) givenUp.set(i, started.includes(i) ? 1 : 0);
                  subscription.unsubscribe();
                }, j.giveUpAfter);
              }
            }, asked);
          });
        });

        expect(most).toBeLessThanOrEqual(size);
        expect(running).toBe(0);
        // First come, first served: work starts in the order it asked, with nobody skipped who stayed.
        expect(started).toEqual([...started].sort((a, b) => a - b));
        for (let i = 0; i < jobs.length; i++) {
          const stayed = !givenUp.has(i);
          if (stayed) expect([i, ended.has(i)]).toEqual([i, true]);
          // One given up while it waited never ran.
          if (givenUp.get(i) === 0) expect([i, started.includes(i)]).toEqual([i, false]);
        }
        expect([pool.busy, pool.waiting]).toEqual([0, 0]);
      }),
      { numRuns: 300 },
    );
  });
});
