import { SchedulerAction, SchedulerLike, Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { batchedDelays } from '../../../lib/provision/batchedDelays';
import { newScheduler } from '../../helpers/marbles';

/** The test scheduler, counting the timers asked of it and the ones still pending (not run, not cancelled). */
function counting(ts: TestScheduler): { scheduler: SchedulerLike; made: () => number; pending: () => number } {
  let made = 0;
  let pending = 0;
  return {
    scheduler: {
      now: () => ts.now(),
      schedule: <S>(work: (this: SchedulerAction<S>, state?: S) => void, delay?: number, state?: S): Subscription => {
        made++;
        pending++;
        let done = false;
        const finish = (): void => {
          if (!done) pending--;
          done = true;
        };
        const inner = ts.schedule(function (this: SchedulerAction<S>, s?: S) {
          finish();
          work.call(this, s);
        }, delay, state);
        return new Subscription(() => {
          finish();
          inner.unsubscribe();
        });
      },
    },
    made: () => made,
    pending: () => pending,
  };
}

describe('batchedDelays: one timer per distinct delay (virtual time)', () => {
  it('runs each work at its delay, in order per delay, with one pending timer per delay', () => {
    const ts = newScheduler();
    ts.run(() => {
      const { scheduler, made, pending } = counting(ts);
      const batched = batchedDelays(scheduler);
      const ran: string[] = [];
      const at = (what: string) => () => void ran.push(`${ts.now()} ${what}`);
      for (const [when, what] of [[0, 'a'], [3, 'b'], [4, 'c']] as const) ts.schedule(() => batched.schedule(at(what), 10), when);
      batched.schedule(at('x'), 25);
      ts.schedule(() => expect(pending()).toBe(2), 5);
      ts.flush();
      expect(ran).toEqual(['10 a', '13 b', '14 c', '25 x']);
      expect(pending()).toBe(0);
      // One for each line's head as it came up (a, b, c, x), never one per work scheduled while another waited.
      expect(made()).toBe(4);
    });
  });

  it('many works at one delay share one timer', () => {
    const ts = newScheduler();
    ts.run(() => {
      const { scheduler, made } = counting(ts);
      const batched = batchedDelays(scheduler);
      let ran = 0;
      for (let i = 0; i < 1000; i++) batched.schedule(() => void ran++, 60);
      ts.flush();
      expect(ran).toBe(1000);
      expect(made()).toBe(1);
    });
  });

  it('a cancelled work never runs; when nothing live is left its timer is cancelled too', () => {
    const ts = newScheduler();
    ts.run(() => {
      const { scheduler, pending } = counting(ts);
      const batched = batchedDelays(scheduler);
      const ran: string[] = [];
      const first = batched.schedule(() => void ran.push('first'), 10);
      const second = batched.schedule(() => void ran.push('second'), 10);
      batched.schedule(() => void ran.push('third'), 10);
      first.unsubscribe();
      second.unsubscribe();
      ts.flush();
      expect(ran).toEqual(['third']);
      const last = batched.schedule(() => void ran.push('never'), 10);
      expect(pending()).toBe(1);
      last.unsubscribe();
      expect(pending()).toBe(0);
      ts.flush();
      expect(ran).toEqual(['third']);
    });
  });

  it('work scheduled from delayed work runs at its own delay', () => {
    const ts = newScheduler();
    ts.run(() => {
      const batched = batchedDelays(ts);
      const ran: string[] = [];
      batched.schedule(() => {
        ran.push(`${ts.now()} a`);
        batched.schedule(() => void ran.push(`${ts.now()} a2`), 10);
      }, 10);
      ts.schedule(() => batched.schedule(() => void ran.push(`${ts.now()} b`), 10), 5);
      ts.flush();
      expect(ran).toEqual(['10 a', '15 b', '20 a2']);
    });
  });

  it('work without a delay goes to the underlying scheduler as it is', () => {
    const ts = newScheduler();
    ts.run(() => {
      const ran: number[] = [];
      batchedDelays(ts).schedule(() => void ran.push(ts.now()), 0);
      ts.flush();
      expect(ran).toEqual([0]);
    });
  });
});
