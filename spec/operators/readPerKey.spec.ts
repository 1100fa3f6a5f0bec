import { map } from 'rxjs';
import { ReadResult, SlotPool, readPerKey } from '@rxfleet/operators';
import { Cold, newScheduler } from '../helpers/marbles';

// A request is '<key><tag>' ('a1', 'a!'); '!' marks a request that needs more than a plain read.
const keyOf = (request: string): string => request[0];
const needsMore = (next: string, running: string): boolean => next.endsWith('!') && !running.endsWith('!');
const requests = { x: 'a1', y: 'a2', s: 'a!', z: 'a3', p: 'b1', q: 'b!' };

const summary = (r: ReadResult<string, string, string>): string =>
  `${r.key}:${r.requests.join(',')}:${r.status}${r.status === 'answered' ? `:${r.value}` : ''}`;

describe('readPerKey', () => {
  it('a request for a key already being read joins that read; every request gets the one answer', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const reads: Record<string, Cold<string>> = {
        a1: cold('---r|', { r: 'A' }),
        b1: cold('   -r|', { r: 'B' }),
      };
      const source = cold('xy-p---|', requests);
      const result = source.pipe(readPerKey({ key: keyOf, read: (req) => reads[req] }), map(summary));
      expectObservable(result).toBe('---AB--|', { A: 'a:a1,a2:answered:A', B: 'b:b1:answered:B' });
      expectSubscriptions(reads.a1.subscriptions).toBe('^--!');
      expectSubscriptions(reads.b1.subscriptions).toBe('---^!');
      expectSubscriptions(source.subscriptions).toBe('^------!');
    });
  });

  it('a stronger request aborts the running read and supersedes it, taking its requests along first', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const reads: Record<string, Cold<string>> = {
        a1: cold('-----r', { r: 'OLD' }),
        'a!': cold('   ---r', { r: 'NEW' }),
      };
      const source = cold('xy-sz-----|', requests);
      const result = source.pipe(readPerKey({ key: keyOf, read: (req) => reads[req], supersedes: needsMore }), map(summary));
      // OLD would have answered at 5; it was aborted at 3 and never lands. a3 joins the new read.
      expectObservable(result).toBe('------R---|', { R: 'a:a1,a2,a!,a3:answered:NEW' });
      expectSubscriptions(reads.a1.subscriptions).toBe('^--!');
      expectSubscriptions(reads['a!'].subscriptions).toBe('---^--!');
    });
  });

  it('a request that is not stronger than the running one joins it even when it is marked', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const strong = cold('--r', { r: 'S' });
      const source = cold('ss---|', { s: 'a!' });
      const result = source.pipe(readPerKey({ key: keyOf, read: () => strong, supersedes: needsMore }), map(summary));
      expectObservable(result).toBe('--R--|', { R: 'a:a!,a!:answered:S' });
      expectSubscriptions(strong.subscriptions).toBe('^-!');
    });
  });

  it('a read that errors or completes without an answer fails every request waiting on it', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const reads: Record<string, Cold<string>> = {
        a1: cold('--#', undefined, new Error('404')),
        b1: cold('---|'),
      };
      const source = cold('xyp---|', requests);
      const results: Array<ReadResult<string, string, string>> = [];
      const result = source.pipe(
        readPerKey({ key: keyOf, read: (req) => reads[req] }),
        map((r) => {
          results.push(r);
          return summary(r);
        }),
      );
      expectObservable(result).toBe('--A--B|', { A: 'a:a1,a2:failed', B: 'b:b1:failed' });
      scheduler.schedule(() => {
        expect(results.map((r) => (r.status === 'failed' ? (r.error as Error).message : r.status))).toEqual([
          '404',
          'read completed without an answer',
        ]);
      }, 6);
    });
  });

  it('with a concurrency limit, a waiting read can still be joined and superseded; dead ones are skipped', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const reads: Record<string, Cold<string>> = {
        a1: cold('--r', { r: 'A' }),
        b1: cold('r', { r: 'never read' }),
        'b!': cold('  -r', { r: 'B' }),
      };
      // b1 waits behind a1; b! supersedes it while it waits, so b1 is never read.
      const source = cold('xpq-----|', requests);
      const result = source.pipe(
        readPerKey({ key: keyOf, read: (req) => reads[req], supersedes: needsMore, concurrency: 1 }),
        map(summary),
      );
      expectObservable(result).toBe('--AB----|', { A: 'a:a1:answered:A', B: 'b:b1,b!:answered:B' });
      expectSubscriptions(reads.a1.subscriptions).toBe('^-!');
      expectSubscriptions(reads.b1.subscriptions).toBe([]);
      expectSubscriptions(reads['b!'].subscriptions).toBe('--^!');
    });
  });

  it('a cancelled key aborts its read and hands back its requests as cancelled; an idle key is ignored', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const read = cold('-----r', { r: 'A' });
      const source = cold('xy-------|', requests);
      const cancel = hot(' -b-a-----');
      const result = source.pipe(readPerKey({ key: keyOf, read: () => read, cancel }), map(summary));
      expectObservable(result).toBe('---C-----|', { C: 'a:a1,a2:cancelled' });
      expectSubscriptions(read.subscriptions).toBe('^--!');
      expectSubscriptions(cancel.subscriptions).toBe('^--------!');
    });
  });

  it('a request after a read landed starts a new read', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const read = cold('-r', { r: 'A' });
      const source = cold('x--y-|', requests);
      const result = source.pipe(readPerKey({ key: keyOf, read: () => read }), map(summary));
      expectObservable(result).toBe('-A--B|', { A: 'a:a1:answered:A', B: 'a:a2:answered:A' });
      expectSubscriptions(read.subscriptions).toBe(['^!', '---^!']);
    });
  });

  it('completes only once the source has completed and every read has landed', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const source = cold('x|', requests);
      const result = source.pipe(readPerKey({ key: keyOf, read: () => cold('----r', { r: 'A' }) }), map(summary));
      expectObservable(result).toBe('----(A|)', { A: 'a:a1:answered:A' });
    });
  });

  it('a read factory that throws fails its requests instead of erroring the stream', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const source = cold('x-|', requests);
      const result = source.pipe(
        readPerKey<string, string, string>({
          key: keyOf,
          read: () => {
            throw new Error('no reader');
          },
        }),
        map(summary),
      );
      expectObservable(result).toBe('A-|', { A: 'a:a1:failed' });
    });
  });

  it('a source error errors the output and aborts every read', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const read = cold('-----r', { r: 'A' });
      const source = cold('xp-#', requests);
      const cancel = hot(' -----');
      expectObservable(source.pipe(readPerKey({ key: keyOf, read: () => read, cancel }), map(summary))).toBe('---#');
      expectSubscriptions(read.subscriptions).toBe(['^--!', '-^-!']);
      expectSubscriptions(cancel.subscriptions).toBe('^--!');
    });
  });

  it('a cancel notifier error errors the output', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const read = cold('-----r', { r: 'A' });
      const source = cold('x-----|', requests);
      const cancel = hot(' --#');
      expectObservable(source.pipe(readPerKey({ key: keyOf, read: () => read, cancel }), map(summary))).toBe('--#');
      expectSubscriptions(read.subscriptions).toBe('^-!');
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
  });

  it('unsubscribing aborts every running read', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const read = cold('-----r', { r: 'A' });
      const source = cold('xp------|', requests);
      expectObservable(source.pipe(readPerKey({ key: keyOf, read: () => read }), map(summary)), '---!').toBe('----');
      expectSubscriptions(read.subscriptions).toBe(['^--!', '-^-!']);
      expectSubscriptions(source.subscriptions).toBe('^--!');
    });
  });

  it("with `fresh`, a request arriving once its key's read has started is read again after that read answers", () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      // y (a2) must be answered by a read that started after it arrived; x's read started at 0.
      const reads: Record<string, Cold<string>> = { a1: cold('---r', { r: 'A' }), a2: cold('   ---r', { r: 'B' }) };
      const source = cold('x-y--------|', requests);
      const result = source.pipe(readPerKey({ key: keyOf, read: (req) => reads[req], fresh: (req) => req === 'a2' }), map(summary));
      expectObservable(result).toBe('---A--B----|', { A: 'a:a1:answered:A', B: 'a:a2:answered:B' });
      expectSubscriptions(reads.a1.subscriptions).toBe('^--!');
      expectSubscriptions(reads.a2.subscriptions).toBe('---^--!');
    });
  });

  it("with `fresh`, a request arriving while its key's read still waits for a slot joins it", () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable }) => {
      const reads: Record<string, Cold<string>> = { b1: cold('---r', { r: 'B' }), a1: cold('-r', { r: 'A' }) };
      const source = cold('pxy------|', requests);
      const result = source.pipe(readPerKey({ key: keyOf, read: (req) => reads[req], fresh: () => true, concurrency: 1 }), map(summary));
      // The read of a1 waits behind b1's until 3; a2 arrives at 2, while it waits, so it joins it.
      expectObservable(result).toBe('---BA----|', { B: 'b:b1:answered:B', A: 'a:a1,a2:answered:A' });
    });
  });

  it('with `slots`, reads share a pool with other work and wait their turn in it; a read may give its slot back early', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const slots = new SlotPool(1);
      const other = cold('----x|');
      // The other work holds the pool's one slot from 0 to 5: the read of a1 waits for it.
      slots.run(() => other).subscribe();
      const reads: Record<string, Cold<string>> = { a1: cold('-r', { r: 'A' }), b1: cold('---r', { r: 'B' }) };
      const source = cold('xp--------|', requests);
      const result = source.pipe(
        readPerKey({
          key: keyOf,
          read: (req, giveBack) => {
            // b1 polls: it gives its slot back at once, so nothing waits behind its wait.
            if (req === 'b1') giveBack();
            return reads[req];
          },
          slots,
        }),
        map(summary),
      );
      expectObservable(result).toBe('------A--B|', { A: 'a:a1:answered:A', B: 'b:b1:answered:B' });
      expectSubscriptions(other.subscriptions).toBe('^----!');
      expectSubscriptions(reads.a1.subscriptions).toBe('-----^!');
      expectSubscriptions(reads.b1.subscriptions).toBe('------^--!');
    });
  });

  it('refuses both `concurrency` and `slots`', () => {
    expect(() => readPerKey({ key: keyOf, read: () => [], concurrency: 1, slots: new SlotPool(1) })).toThrow(TypeError);
  });

  it('refuses a concurrency below one', () => {
    expect(() => readPerKey({ key: keyOf, read: () => [], concurrency: 0 })).toThrow(RangeError);
  });
});
