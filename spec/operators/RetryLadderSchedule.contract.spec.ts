import { Subject, config } from 'rxjs';
import { RetryLadderSchedule } from '@rxfleet/operators';
import { trackingScheduler } from '@rxfleet/operators/testing';
import { newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// The core's contract: its books are brought up to date before any callback runs, so a throw never
// leaves them half-updated, and a throw with no caller to go to goes to `onError`.

describe('RetryLadderSchedule: the contract', () => {
  failOnUnhandledErrors();

  it("behaves as its doc comment's diagram says", () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const due = new Subject<string>();
      const repairs = new RetryLadderSchedule<string>({
        fast: 1,
        fastAttempts: 1,
        slow: 2,
        maxSlow: 8,
        scheduler,
        onDue: () => due.next('d'),
      });
      cold('f-ff---f------f---------s-f').subscribe((call) => (call === 'f' ? repairs.fail('k') : repairs.succeed('k')));
      expectObservable(due).toBe('-d--d------d----------d----d');
    });
  });

  describe('a callback that throws', () => {
    it('`onPendingChange` throwing in `fail` comes out of it with the retry scheduled and counted; it still falls due', () => {
      const scheduler = newScheduler();
      const due: number[] = [];
      scheduler.run(() => {
        let broken = true;
        const repairs = new RetryLadderSchedule<string>({
          fast: 3,
          scheduler,
          onDue: () => due.push(scheduler.now()),
          onPendingChange: () => {
            if (broken) throw new Error('gauge broke');
          },
        });
        scheduler.schedule(() => {
          expect(() => repairs.fail('k')).toThrow('gauge broke');
          expect([repairs.pending, repairs.isPending('k'), repairs.fail('k')]).toEqual([1, true, false]);
          broken = false;
        }, 0);
      });
      expect(due).toEqual([3]);
    });

    it('`onPendingChange` throwing in `succeed` or `clear` comes out of it with the retries already cancelled', () => {
      const scheduler = newScheduler();
      const timers = trackingScheduler(scheduler);
      const due: string[] = [];
      scheduler.run(() => {
        let broken = false;
        const repairs = new RetryLadderSchedule<string>({
          fast: 3,
          scheduler: timers.scheduler,
          onDue: (key) => due.push(key),
          onPendingChange: (n) => {
            if (broken) throw new Error(`gauge broke at ${n}`);
          },
        });
        scheduler.schedule(() => {
          repairs.fail('a');
          repairs.fail('b');
          repairs.fail('c');
          broken = true;
          expect(() => repairs.succeed('a')).toThrow('gauge broke at 2');
          expect(() => repairs.clear()).toThrow('gauge broke at 0');
          expect([repairs.pending, repairs.size, timers.armed()]).toEqual([0, 0, 0]);
        }, 0);
      });
      expect(due).toEqual([]);
    });

    it('`onDue` throwing when a retry falls due goes to `onError`, the books already up to date; the other keys fall due', () => {
      const scheduler = newScheduler();
      const errors: unknown[] = [];
      const due: string[] = [];
      scheduler.run(() => {
        const repairs: RetryLadderSchedule<string> = new RetryLadderSchedule<string>({
          fast: 2,
          scheduler,
          onDue: (key) => {
            due.push(key);
            if (key === 'a') throw new Error('a broke');
          },
          onError: (error) => {
            errors.push(error);
            expect([repairs.isPending('a'), repairs.has('a')]).toEqual([false, true]);
          },
        });
        scheduler.schedule(() => {
          repairs.fail('a');
          repairs.fail('b');
        }, 0);
      });
      expect(due).toEqual(['a', 'b']);
      expect(errors).toEqual([new Error('a broke')]);
    });

    it('`onPendingChange` throwing as a retry falls due goes to `onError`, and that retry is not told', () => {
      const scheduler = newScheduler();
      const errors: unknown[] = [];
      const due: string[] = [];
      scheduler.run(() => {
        const repairs = new RetryLadderSchedule<string>({
          fast: 2,
          scheduler,
          onDue: (key) => due.push(key),
          onPendingChange: (n) => {
            if (n === 0) throw new Error('gauge broke');
          },
          onError: (error) => errors.push(error),
        });
        scheduler.schedule(() => repairs.fail('a'), 0);
        scheduler.schedule(() => expect([repairs.pending, repairs.isPending('a')]).toEqual([0, false]), 3);
      });
      expect(due).toEqual([]);
      expect(errors).toEqual([new Error('gauge broke')]);
    });

    it("without `onError`, a throw as a retry falls due takes rxjs's path for an error with nowhere to go", () => {
      const scheduler = newScheduler();
      const unhandled: unknown[] = [];
      config.onUnhandledError = (error) => unhandled.push(error);
      scheduler.run(() => {
        const repairs = new RetryLadderSchedule<string>({
          fast: 2,
          scheduler,
          onDue: () => {
            throw new Error('due broke');
          },
        });
        scheduler.schedule(() => repairs.fail('a'), 0);
      });
      config.onUnhandledError = null;
      expect(unhandled).toEqual([new Error('due broke')]);
    });
  });

  it('a retry answered from inside `onDue` by another failure climbs the ladder, one pending at a time', () => {
    const scheduler = newScheduler();
    const due: string[] = [];
    scheduler.run(() => {
      const repairs: RetryLadderSchedule<string> = new RetryLadderSchedule<string>({
        fast: 1,
        fastAttempts: 2,
        slow: 4,
        scheduler,
        onDue: (key, retry) => {
          due.push(`${scheduler.now()}#${retry}`);
          if (retry < 4) expect(repairs.fail(key)).toBe(true);
        },
      });
      scheduler.schedule(() => repairs.fail('k'), 0);
    });
    expect(due).toEqual(['1#1', '2#2', '6#3', '10#4']);
  });
});
