import { Observable, Subject, config, of, throwError } from 'rxjs';
import { PerKeyReader, NoAnswerError, ReadResult, SlotPool } from '@rxfleet/operators';
import { Cold, newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// The core's contract: a callback that throws never leaves its books half-updated, and goes where
// the class comment says; its reads are subscribed through the kit's subscriber.

type Result = ReadResult<string, string, string>;
const keyOf = (request: string): string => request[0];
const needsMore = (next: string, running: string): boolean => next.endsWith('!') && !running.endsWith('!');
const summary = (r: Result): string =>
  `${r.key}:${r.requests.join(',')}:${r.status}${r.status === 'answered' ? `:${r.value}` : r.status === 'failed' ? `:${(r.error as Error).name}` : ''}`;

describe('PerKeyReader: the contract', () => {
  failOnUnhandledErrors();

  it("behaves as its doc comment's diagram says", () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const reads: Record<string, Cold<string>> = { a1: cold('---A'), 'a!': cold('---A'), a2: cold('---B') };
      const landed = new Subject<string>();
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead) => reads[lead],
        supersedes: needsMore,
        fresh: () => true,
        // x and s land together with A; y, which came once s's read had started, with B.
        onLanded: (r) => landed.next(r.status === 'answered' && r.requests.join() === (r.value === 'A' ? 'a1,a!' : 'a2') ? r.value : '?'),
      });
      hot('xsy------', { x: 'a1', s: 'a!', y: 'a2' }).subscribe((r) => keyed.request(r));
      expectObservable(landed).toBe('----A--B');
      expectSubscriptions(reads.a1.subscriptions).toBe('^!');
      expectSubscriptions(reads['a!'].subscriptions).toBe('-^--!');
      expectSubscriptions(reads.a2.subscriptions).toBe('----^--!');
    });
  });

  describe('a callback that throws', () => {
    it('`key`, `supersedes` or `fresh` throwing comes out of `request`, and the request was never made', () => {
      const scheduler = newScheduler();
      const landed: string[] = [];
      scheduler.run(({ cold, expectSubscriptions }) => {
        const read = cold('--r', { r: 'A' });
        const keyed = new PerKeyReader<string, string, string>({
          key: (r) => {
            if (r === 'bad') throw new Error('bad key');
            return keyOf(r);
          },
          read: () => read,
          supersedes: (next) => {
            if (next === 'a?') throw new Error('bad predicate');
            return false;
          },
          fresh: (r) => {
            if (r === 'a#') throw new Error('bad fresh');
            return false;
          },
          onLanded: (r) => landed.push(`${scheduler.now()} ${summary(r)}`),
        });
        scheduler.schedule(() => {
          keyed.request('a1');
          expect(() => keyed.request('bad')).toThrow('bad key');
          expect(() => keyed.request('a?')).toThrow('bad predicate');
        }, 0);
        // The read has started: `fresh` is asked now.
        scheduler.schedule(() => {
          expect(() => keyed.request('a#')).toThrow('bad fresh');
          keyed.request('a2');
          expect([keyed.size, keyed.has('a')]).toEqual([1, true]);
        }, 1);
        // The running read was never aborted by the throws.
        expectSubscriptions(read.subscriptions).toBe('^-!');
      });
      expect(landed).toEqual(['2 a:a1,a2:answered:A']);
    });

    it('`onLanded` throwing goes to `onError`; the slot is given back and the latecomers read regardless', () => {
      const scheduler = newScheduler();
      const errors: unknown[] = [];
      const starts: string[] = [];
      const boom = new Error('landing broke');
      scheduler.run(({ cold }) => {
        const pool = new SlotPool(1);
        const keyed = new PerKeyReader<string, string, string>({
          key: keyOf,
          read: (lead) => {
            starts.push(`${scheduler.now()} ${lead}`);
            return cold('-r', { r: lead.toUpperCase() });
          },
          slots: pool,
          fresh: () => true,
          onLanded: () => {
            throw boom;
          },
          onError: (error) => errors.push(error),
        });
        scheduler.schedule(() => {
          keyed.request('a1');
          keyed.request('b1');
        }, 0);
        scheduler.schedule(() => keyed.request('b2'), 0);
        // a1's read started at 0: a2 is a latecomer.
        scheduler.schedule(() => keyed.request('a2'), 0);
        scheduler.schedule(() => expect([pool.busy, pool.waiting, keyed.size]).toEqual([0, 0, 0]), 10);
      });
      // a1 landed at 1 (its onLanded threw), b1 took the slot, then a2's read behind it.
      expect(starts).toEqual(['0 a1', '1 b1', '2 a2']);
      expect(errors).toEqual([boom, boom, boom]);
    });

    it("without `onError`, `onLanded`'s throw takes rxjs's path for an error with nowhere to go, wherever the landing came from", () => {
      const boom = new Error('landing broke');
      const unhandled: unknown[] = [];
      config.onUnhandledError = (error) => unhandled.push(error);
      const answer = new Subject<string>();
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead) => (lead === 's1' ? of('S') : answer),
        onLanded: () => {
          throw boom;
        },
      });
      keyed.request('s1');
      keyed.request('a1');
      keyed.request('b1');
      keyed.cancel('b');
      answer.next('A');
      config.onUnhandledError = null;
      expect(unhandled).toEqual([boom, boom, boom]);
      expect(keyed.size).toBe(0);
    });

    it('`read` throwing, returning no ObservableInput, erroring or completing empty is a failed landing, not an error', () => {
      const landed: string[] = [];
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead): Observable<string> => {
          if (lead === 'a1') throw new Error('no reader');
          if (lead === 'b1') return undefined as unknown as Observable<string>;
          if (lead === 'c1') return throwError(() => new RangeError('refused'));
          return new Observable<string>((s) => s.complete());
        },
        onLanded: (r) => landed.push(summary(r)),
      });
      for (const r of ['a1', 'b1', 'c1', 'd1']) keyed.request(r);
      expect(landed).toEqual(['a:a1:failed:Error', 'b:b1:failed:TypeError', 'c:c1:failed:RangeError', 'd:d1:failed:NoAnswerError']);
      expect(new NoAnswerError().message).toBe('read completed without an answer');
    });
  });

  describe('dispose and cancel with reads in flight', () => {
    it('dispose aborts running reads and drops waiting ones unstarted, telling nobody; later requests are ignored', () => {
      const scheduler = newScheduler();
      const landed: string[] = [];
      const starts: string[] = [];
      scheduler.run(({ cold, expectSubscriptions }) => {
        const read = cold('---r', { r: 'A' });
        const keyed = new PerKeyReader<string, string, string>({
          key: keyOf,
          read: (lead) => {
            starts.push(lead);
            return read;
          },
          slots: new SlotPool(1),
          onLanded: (r) => landed.push(summary(r)),
        });
        scheduler.schedule(() => ['a1', 'b1', 'c1'].forEach((r) => keyed.request(r)), 0);
        scheduler.schedule(() => keyed.dispose(), 1);
        scheduler.schedule(() => keyed.request('d1'), 2);
        expectSubscriptions(read.subscriptions).toBe('^!');
      });
      expect(starts).toEqual(['a1']);
      expect(landed).toEqual([]);
    });

    it('a cancel while the read waits for its slot takes it out of the line; one while it runs aborts it', () => {
      const scheduler = newScheduler();
      const landed: string[] = [];
      scheduler.run(({ cold, expectSubscriptions }) => {
        const reads: Record<string, Cold<string>> = { a1: cold('---A'), b1: cold('-B'), c1: cold('-C') };
        const keyed = new PerKeyReader<string, string, string>({
          key: keyOf,
          read: (lead) => reads[lead],
          slots: new SlotPool(1),
          onLanded: (r) => landed.push(`${scheduler.now()} ${summary(r)}`),
        });
        scheduler.schedule(() => ['a1', 'b1', 'c1'].forEach((r) => keyed.request(r)), 0);
        scheduler.schedule(() => keyed.cancel('b'), 1);
        scheduler.schedule(() => keyed.cancel('a'), 2);
        expectSubscriptions(reads.a1.subscriptions).toBe('^-!');
        expectSubscriptions(reads.b1.subscriptions).toBe([]);
        expectSubscriptions(reads.c1.subscriptions).toBe('--^!');
      });
      expect(landed).toEqual(['1 b:b1:cancelled', '2 a:a1:cancelled', '3 c:c1:answered:C']);
    });
  });

  describe('re-entrant asking', () => {
    it('a request made from `onLanded` for the same key joins the latecomers\u2019 read, which starts after the landing', () => {
      const scheduler = newScheduler();
      const landed: string[] = [];
      const starts: string[] = [];
      scheduler.run(({ cold }) => {
        const keyed: PerKeyReader<string, string, string> = new PerKeyReader<string, string, string>({
          key: keyOf,
          read: (lead) => {
            starts.push(`${scheduler.now()} ${lead}`);
            return cold('--r', { r: lead.toUpperCase() });
          },
          fresh: () => true,
          onLanded: (r) => {
            landed.push(`${scheduler.now()} ${summary(r)}`);
            if (r.requests.includes('a1')) keyed.request('a3');
          },
        });
        scheduler.schedule(() => keyed.request('a1'), 0);
        scheduler.schedule(() => keyed.request('a2'), 1);
      });
      expect(starts).toEqual(['0 a1', '2 a2']);
      expect(landed).toEqual(['2 a:a1:answered:A1', '4 a:a2,a3:answered:A2']);
    });

    it('`onLanded` is told before the next read takes the slot, so a read that answers at once cannot land first', () => {
      const answer = new Subject<string>();
      const landed: string[] = [];
      const keyed = new PerKeyReader<string, string, string>({
        key: keyOf,
        read: (lead) => (lead === 'a1' ? answer : of(lead.toUpperCase())),
        slots: new SlotPool(1),
        onLanded: (r) => landed.push(summary(r)),
      });
      keyed.request('a1');
      keyed.request('b1');
      keyed.request('c1');
      answer.next('A');
      expect(landed).toEqual(['a:a1:answered:A', 'b:b1:answered:B1', 'c:c1:answered:C1']);
    });

    it('a synchronous chain of 100,000 reads, each asked from the landing before it, runs flat', () => {
      let last = -1;
      const keyed: PerKeyReader<number, number, number> = new PerKeyReader<number, number, number>({
        key: (n) => n,
        read: (n) => of(n),
        slots: new SlotPool(1),
        onLanded: (r) => {
          last = r.key;
          if (r.key < 100_000) keyed.request(r.key + 1);
        },
      });
      keyed.request(0);
      expect(last).toBe(100_000);
    });
  });
});
