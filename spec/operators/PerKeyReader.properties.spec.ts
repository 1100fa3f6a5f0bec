import fc from 'fast-check';
import { Observable, mergeMap, of, throwError, timer } from 'rxjs';
import { PerKeyReader, ReadResult, SlotPool } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';

/** One step of a generated run: a request (its key, strength, freshness) or a cancel, and the gap before it. */
interface Step {
  gap: number;
  kind: 'request' | 'cancel';
  key: 'a' | 'b' | 'c';
  strong: boolean;
  fresh: boolean;
}

const step: fc.Arbitrary<Step> = fc.record({
  gap: fc.integer({ min: 0, max: 2 }),
  kind: fc.constantFrom<'request' | 'cancel'>('request', 'request', 'request', 'request', 'cancel'),
  key: fc.constantFrom<'a' | 'b' | 'c'>('a', 'b', 'c'),
  strong: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  fresh: fc.boolean(),
});

// A read ends after 0 (synchronously) to 4 frames, answering or failing.
const reading = fc.record({ duration: fc.integer({ min: 0, max: 4 }), fails: fc.integer({ min: 0, max: 5 }).map((n) => n === 0) });

describe('PerKeyReader: properties', () => {
  it('keeps at most one read in flight per key (and at most `slots` in all), lands every request exactly once, and never lands an aborted read', () => {
    fc.assert(
      fc.property(
        fc.array(step, { minLength: 1, maxLength: 40 }),
        fc.array(reading, { minLength: 1, maxLength: 20 }),
        fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
        (steps, readings, size) => {
          const scheduler = newScheduler();
          const running = new Map<string, number>();
          let runningAll = 0;
          let mostAll = 0;
          let mostPerKey = 0;
          let reads = 0;
          const aborted = new Set<number>();
          const landed: ReadResult<string, string, number>[] = [];
          const asked: string[] = [];
          const slots = size === undefined ? undefined : new SlotPool(size);
          scheduler.run(() => {
            const keyed = new PerKeyReader<string, string, number>({
              key: (r) => r[0],
              read: (lead): Observable<number> => {
                const serial = reads++;
                const plan = readings[serial % readings.length];
                const end: Observable<number> = plan.fails ? throwError(() => new Error(`read ${serial} failed`)) : of(serial);
                const answer = plan.duration === 0 ? end : timer(plan.duration).pipe(mergeMap(() => end));
                const key = lead[0];
                return new Observable<number>((subscriber) => {
                  running.set(key, (running.get(key) ?? 0) + 1);
                  mostPerKey = Math.max(mostPerKey, running.get(key) as number);
                  mostAll = Math.max(mostAll, ++runningAll);
                  let ended = false;
                  const inner = answer.subscribe({
                    next: (v) => {
                      ended = true;
                      subscriber.next(v);
                    },
                    error: (e: unknown) => {
                      ended = true;
                      subscriber.error(e);
                    },
                  });
                  return () => {
                    if (!ended) aborted.add(serial);
                    running.set(key, (running.get(key) as number) - 1);
                    runningAll--;
                    inner.unsubscribe();
                  };
                });
              },
              slots,
              supersedes: (next, current) => next.includes('!') && !current.includes('!'),
              fresh: (r) => r.includes('*'),
              onLanded: (r) => landed.push(r),
            });
            let at = 0;
            steps.forEach((s, i) => {
              at += s.gap;
              scheduler.schedule(() => {
                if (s.kind === 'cancel') keyed.cancel(s.key);
                else {
                  const request = `${s.key}${i}${s.strong ? '!' : ''}${s.fresh ? '*' : ''}`;
                  asked.push(request);
                  keyed.request(request);
                }
              }, at);
            });
          });

          expect(mostPerKey).toBeLessThanOrEqual(1);
          if (size !== undefined) expect(mostAll).toBeLessThanOrEqual(size);
          expect(runningAll).toBe(0);
          // Every request lands once, with its own key, in arrival order within its result.
          const out = landed.flatMap((r) => r.requests);
          expect([...out].sort()).toEqual([...asked].sort());
          for (const r of landed) {
            expect(r.requests.every((q) => q[0] === r.key)).toBe(true);
            expect(r.requests.map((q) => asked.indexOf(q))).toEqual(r.requests.map((q) => asked.indexOf(q)).sort((x, y) => x - y));
            if (r.status === 'answered') expect(aborted.has(r.value)).toBe(false);
          }
          if (slots !== undefined) expect([slots.busy, slots.waiting]).toEqual([0, 0]);
        },
      ),
      { numRuns: 300 },
    );
  });
});
