import { EMPTY, Observable, Subject, map, of, take, throwError } from 'rxjs';
import { NoAnswerError, ReadResult, readPerKey } from '@rxfleet/operators';
import { Cold, newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// Requests are '<key><tag>'; '!' marks one that needs more than a plain read.
const keyOf = (request: string): string => request[0];
const needsMore = (next: string, running: string): boolean => next.endsWith('!') && !running.endsWith('!');
const requests = { x: 'a1', y: 'a2', s: 'a!', p: 'b1', q: 'c1' };
const summary = (r: ReadResult<string, string, unknown>): string =>
  `${r.key}:${r.requests.join(',')}:${r.status}${r.status === 'answered' ? `:${String(r.value)}` : r.status === 'failed' ? `:${(r.error as Error).name}` : ''}`;

describe('readPerKey: the rxjs contract', () => {
  failOnUnhandledErrors();

  it("behaves as its doc comment's diagram says", () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const reads: Record<string, Cold<string>> = {
        a1: cold('--------A|'),
        'a!': cold('---B|'),
      };
      const source = cold('x-y-s-------|', requests);
      const result = source.pipe(readPerKey({ key: keyOf, read: (r) => reads[r], supersedes: needsMore }), map(summary));
      expectObservable(result).toBe('-------R----|', { R: 'a:a1,a2,a!:answered:B' });
      expectSubscriptions(reads.a1.subscriptions).toBe('^---!');
      expectSubscriptions(reads['a!'].subscriptions).toBe('----^--!');
      expectSubscriptions(source.subscriptions).toBe('^-----------!');
    });
  });

  describe('a callback that throws errors the output', () => {
    it('`key` throwing: the output errors, the source is unsubscribed and running reads are aborted', () => {
      const scheduler = newScheduler();
      const boom = new Error('bad key');
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const read = cold('-----r|');
        const source = cold('xp-q---|', requests);
        const key = (r: string): string => {
          if (r === 'c1') throw boom;
          return keyOf(r);
        };
        expectObservable(source.pipe(readPerKey({ key, read: () => read }))).toBe('---#', undefined, boom);
        expectSubscriptions(read.subscriptions).toBe(['^--!', '-^-!']);
        expectSubscriptions(source.subscriptions).toBe('^--!');
      });
    });

    it('`supersedes` throwing: the output errors instead of the request being lost', () => {
      const scheduler = newScheduler();
      const boom = new Error('bad predicate');
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const read = cold('-----r|');
        const source = cold('x-y---|', requests);
        const supersedes = (): boolean => {
          throw boom;
        };
        expectObservable(source.pipe(readPerKey({ key: keyOf, read: () => read, supersedes }))).toBe('--#', undefined, boom);
        expectSubscriptions(read.subscriptions).toBe('^-!');
        expectSubscriptions(source.subscriptions).toBe('^-!');
      });
    });

    it('`read` is the exception on purpose: a factory that throws, or returns no ObservableInput, fails its requests', () => {
      const scheduler = newScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const source = cold('xp|', requests);
        const read = (r: string): Observable<string> => {
          if (r === 'a1') throw new Error('no read');
          return undefined as unknown as Observable<string>;
        };
        expectObservable(source.pipe(readPerKey({ key: keyOf, read }), map(summary))).toBe('xp|', {
          x: 'a:a1:failed:Error',
          p: 'b:b1:failed:TypeError',
        });
      });
    });
  });

  describe('source error and completion with reads in flight', () => {
    it('a source error errors at once and aborts running reads; waiting ones never start', () => {
      const scheduler = newScheduler();
      const boom = new Error('source broke');
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const reads: Record<string, Cold<string>> = { a1: cold('----r|'), b1: cold('-r|') };
        const source = cold('xp-#', requests, boom);
        expectObservable(source.pipe(readPerKey({ key: keyOf, read: (r) => reads[r], concurrency: 1 }))).toBe('---#', undefined, boom);
        expectSubscriptions(reads.a1.subscriptions).toBe('^--!');
        expectSubscriptions(reads.b1.subscriptions).toBe([]);
      });
    });

    it('completion waits for running and waiting reads, then completes with the last result', () => {
      const scheduler = newScheduler();
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const reads: Record<string, Cold<string>> = { a1: cold('--A|'), b1: cold('--B|') };
        const source = cold('xp|', requests);
        const result = source.pipe(readPerKey({ key: keyOf, read: (r) => reads[r], concurrency: 1 }), map(summary));
        expectObservable(result).toBe('--x-(p|)', { x: 'a:a1:answered:A', p: 'b:b1:answered:B' });
        expectSubscriptions(reads.a1.subscriptions).toBe('^-!');
        expectSubscriptions(reads.b1.subscriptions).toBe('--^-!');
      });
    });
  });

  it('unsubscribing downstream (take) unsubscribes the source, `cancel` and every running read', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const reads: Record<string, Cold<string>> = { a1: cold('-A|'), b1: cold('------B|'), c1: cold('------C|') };
      const cancel = hot('-----------');
      const source = cold('xpq------|', requests);
      const result = source.pipe(readPerKey({ key: keyOf, read: (r) => reads[r], cancel }), map(summary), take(1));
      expectObservable(result).toBe('-(x|)', { x: 'a:a1:answered:A' });
      expectSubscriptions(source.subscriptions).toBe('^!');
      expectSubscriptions(cancel.subscriptions).toBe('^!');
      expectSubscriptions(reads.b1.subscriptions).toBe('-(^!)');
      expectSubscriptions(reads.c1.subscriptions).toBe('--');
    });
  });

  describe('synchronous and array reads', () => {
    it('a read that answers synchronously lands before the next request; an array answers with its first value', () => {
      const scheduler = newScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const source = cold('xpq(y|)', { ...requests, y: 'd1' });
        const read = (r: string): Observable<string> | string[] =>
          r === 'a1' ? ['A1', 'A2'] : r === 'b1' ? throwError(() => new Error('sync')) : r === 'c1' ? EMPTY : of('D');
        const result = source.pipe(readPerKey({ key: keyOf, read, concurrency: 1 }), map(summary));
        expectObservable(result).toBe('xpq(y|)', {
          x: 'a:a1:answered:A1',
          p: 'b:b1:failed:Error',
          q: 'c:c1:failed:NoAnswerError',
          y: 'd:d1:answered:D',
        });
      });
      expect(new NoAnswerError().message).toBe('read completed without an answer');
    });

    it('a synchronous feedback loop runs flat: 100,000 requests, each fed from the result before it', () => {
      const source = new Subject<number>();
      let last = -1;
      source.pipe(readPerKey({ key: (n: number) => n, read: (n) => of(n), concurrency: 1 })).subscribe((r) => {
        last = r.key;
        if (r.key < 100_000) source.next(r.key + 1);
      });
      source.next(0);
      expect(last).toBe(100_000);
    });
  });

  it('is first come, first served when fed from its own output: a fed request waits behind those already waiting', () => {
    const source = new Subject<string>();
    const answers = new Map<string, Subject<string>>();
    const started: string[] = [];
    source
      .pipe(
        readPerKey({
          key: keyOf,
          read: (r) => {
            started.push(r);
            const answer = new Subject<string>();
            answers.set(r, answer);
            return answer;
          },
          concurrency: 1,
        }),
      )
      .subscribe((r) => {
        if (r.key === 'a') source.next('d1');
      });
    source.next('a1');
    source.next('b1');
    source.next('c1');
    answers.get('a1')?.next('A');
    // d1, fed from a1's result, does not take the slot a1 freed: b1 and c1 were waiting.
    expect(started).toEqual(['a1', 'b1']);
    answers.get('b1')?.next('B');
    answers.get('c1')?.next('C');
    expect(started).toEqual(['a1', 'b1', 'c1', 'd1']);
  });
});
