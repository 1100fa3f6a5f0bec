import { RetryLadderSchedule } from '@rxfleet/operators';
import { newScheduler } from '../helpers/marbles';

describe('RetryLadderSchedule', () => {
  it('retries a failing key fast, then slow, one retry pending at a time; a success starts it over', () => {
    const scheduler = newScheduler();
    const due: string[] = [];
    const pending: number[] = [];
    scheduler.run(({ expectObservable, cold }) => {
      const repairs = new RetryLadderSchedule<string>({
        fast: 1,
        fastAttempts: 2,
        slow: 3,
        scheduler,
        onDue: (key, retry) => due.push(`${scheduler.now()} ${key}#${retry}`),
        onPendingChange: (n) => pending.push(n),
      });
      // f = fail(k), s = succeed(k): the same diagram as retryLadder's.
      const calls = cold('f-f-f-f---s--f|');
      calls.subscribe((c) => (c === 'f' ? repairs.fail('k') : repairs.succeed('k')));
      expectObservable(calls).toBe('f-f-f-f---s--f|');
    });
    // Retries at 1 and 3 are fast; the third failure waits slow (4 + 3); the success at 10 resets
    // the count, so the failure at 13 is fast again.
    expect(due).toEqual(['1 k#1', '3 k#2', '7 k#3', '14 k#1']);
    expect(pending).toEqual([1, 0, 1, 0, 1, 0, 1, 0]);
  });

  it('backs the slow retries off, doubling up to maxSlow; a failure while one is pending changes nothing', () => {
    const scheduler = newScheduler();
    const due: number[] = [];
    scheduler.run(() => {
      const repairs: RetryLadderSchedule<string> = new RetryLadderSchedule<string>({
        fast: 1,
        fastAttempts: 1,
        slow: 2,
        maxSlow: 8,
        scheduler,
        onDue: () => {
          due.push(scheduler.now());
          // The retry finds the key still failing, as a read would.
          repairs.fail('k');
        },
      });
      scheduler.schedule(() => expect(repairs.fail('k')).toBe(true), 0);
      scheduler.schedule(() => expect(repairs.fail('k')).toBe(false), 0);
      scheduler.schedule(() => repairs.clear(), 40);
    });
    expect(due).toEqual([1, 3, 7, 15, 23, 31, 39]);
  });

  it('keeps every key apart, knows which are failing and which have a retry pending, and clears them all', () => {
    const scheduler = newScheduler();
    const due: string[] = [];
    const pending: number[] = [];
    scheduler.run(() => {
      const repairs = new RetryLadderSchedule<string>({
        fast: 5,
        scheduler,
        onDue: (key) => due.push(key),
        onPendingChange: (n) => pending.push(n),
      });
      scheduler.schedule(() => {
        repairs.fail('a');
        repairs.fail('b');
        repairs.succeed('c');
        expect([repairs.size, repairs.pending, repairs.has('a'), repairs.isPending('b'), repairs.has('c')]).toEqual([
          2,
          2,
          true,
          true,
          false,
        ]);
      }, 0);
      scheduler.schedule(() => expect([repairs.size, repairs.pending, repairs.isPending('a')]).toEqual([2, 0, false]), 6);
      scheduler.schedule(() => repairs.fail('a'), 7);
      scheduler.schedule(() => repairs.clear(), 8);
      scheduler.schedule(() => expect([repairs.size, repairs.pending]).toEqual([0, 0]), 20);
    });
    expect(due).toEqual(['a', 'b']);
    expect(pending).toEqual([1, 2, 1, 0, 1, 0]);
  });
});
