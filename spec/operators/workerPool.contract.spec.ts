import { EMPTY, Observable, Subject, map, mergeMap, of, take, throwError } from 'rxjs';
import { NoOutcomeError, Outcome, PoolResult, workDone, workFailed, workerPool } from '@rxfleet/operators';
import { TestTicket } from '@rxfleet/operators/testing';
import { Cold, newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// The rxjs contract, case by case, as rxjs's mergeMap-spec and switchMap-spec check theirs.

type R = PoolResult<TestTicket, unknown>;
const summary = (r: R): string => `${r.ticket.name}:${r.outcome.status}`;
const tickets = (...names: string[]): Record<string, TestTicket> => Object.fromEntries(names.map((n) => [n, new TestTicket(n)]));
const frees = (all: Record<string, TestTicket>): Record<string, number> =>
  Object.fromEntries(Object.entries(all).map(([n, t]) => [n, t.frees]));

describe('workerPool: the rxjs contract', () => {
  failOnUnhandledErrors();

  it("behaves as its doc comment's diagram says", () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const all = tickets('x', 'y');
      const works: Record<string, Cold<Outcome<string>>> = {
        x: cold('--d|', { d: workDone('X') }),
        y: cold('-f|', { f: workFailed(new Error('no')) }),
      };
      const source = cold('xy---------|', all);
      const result = source.pipe(workerPool({ concurrency: 1, work: (t) => works[t.name] }), map(summary));
      expectObservable(result).toBe('--XY-------|', { X: 'x:done', Y: 'y:failed' });
      expectSubscriptions(works.x.subscriptions).toBe('^-!');
      expectSubscriptions(works.y.subscriptions).toBe('--^!');
      expectSubscriptions(source.subscriptions).toBe('^----------!');
    });
  });

  describe('a callback that throws errors the output', () => {
    it('`onBusy` throwing once (concurrency 1): the output errors, nothing is left taken, the error is not unhandled', () => {
      const scheduler = newScheduler();
      const all = tickets('a', 'b', 'c');
      const boom = new Error('gauge broke');
      let calls = 0;
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const work = cold('--d|', { d: workDone(1) });
        const source = cold('abc|', all);
        const onBusy = (): void => {
          if (calls++ === 0) throw boom;
        };
        expectObservable(source.pipe(workerPool({ concurrency: 1, work: () => work, onBusy }))).toBe('#', undefined, boom);
        expectSubscriptions(source.subscriptions).toBe('(^!)');
        expectSubscriptions(work.subscriptions).toBe([]);
      });
      // a was taken and is given back; b and c never reached the pool.
      expect(frees(all)).toEqual({ a: 1, b: 0, c: 0 });
    });

    it('`onBusy` throwing with work in flight unsubscribes that work and frees every ticket held', () => {
      const scheduler = newScheduler();
      const all = tickets('a', 'b', 'c');
      const boom = new Error('gauge broke');
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const work = cold('-----d|', { d: workDone(1) });
        const source = cold('abc--|', all);
        const onBusy = (busy: number): void => {
          if (busy === 2) throw boom;
        };
        expectObservable(source.pipe(workerPool({ concurrency: 2, work: () => work, onBusy }))).toBe('-#', undefined, boom);
        expectSubscriptions(work.subscriptions).toBe(['^!']);
        expectSubscriptions(source.subscriptions).toBe('^!');
      });
      expect(frees(all)).toEqual({ a: 1, b: 1, c: 0 });
    });

    it("a ticket's `start` throwing: the output errors and that ticket and the waiting ones are freed", () => {
      const scheduler = newScheduler();
      const boom = new Error('bad ticket');
      const all = tickets('a', 'c');
      const b = Object.assign(new TestTicket('b'), {
        start: (): boolean => {
          throw boom;
        },
      });
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const work = cold('--d|', { d: workDone(1) });
        const source = cold('(abc)----|', { ...all, b });
        const result = source.pipe(workerPool({ concurrency: 1, work: () => work }), map(summary));
        // a ends at 2; the worker reaches b, whose start throws.
        expectObservable(result).toBe('--(a#)', { a: 'a:done' }, boom);
        expectSubscriptions(work.subscriptions).toBe('^-!');
        expectSubscriptions(source.subscriptions).toBe('^-!');
      });
      expect({ ...frees(all), b: b.frees }).toEqual({ a: 1, b: 1, c: 1 });
    });

    it("a ticket's `hold` throwing (a delayed free): the output errors and the ticket is still freed once", () => {
      const scheduler = newScheduler();
      const boom = new Error('cannot hold');
      const a = Object.assign(new TestTicket('a'), {
        hold: (): void => {
          throw boom;
        },
      });
      scheduler.run(({ cold, expectObservable }) => {
        const source = cold('a---|', { a });
        const work = cold('-d|', { d: workDone(1, { freeAfter: 10 }) });
        expectObservable(source.pipe(workerPool({ concurrency: 1, work: () => work, scheduler }))).toBe('-#', undefined, boom);
      });
      expect(a.frees).toBe(1);
    });

    it("a ticket's `free` throwing: the output errors, and the tickets behind it are still freed", () => {
      const scheduler = newScheduler();
      const boom = new Error('cannot free');
      const all = tickets('b', 'c');
      const a = Object.assign(new TestTicket('a'), {
        free: (): void => {
          throw boom;
        },
      });
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const work = cold('-d|', { d: workDone(1) });
        const source = cold('abc|', { a, ...all });
        expectObservable(source.pipe(workerPool({ concurrency: 1, work: () => work }))).toBe('-#', undefined, boom);
        expectSubscriptions(source.subscriptions).toBe('^!');
      });
      expect(frees(all)).toEqual({ b: 1, c: 0 });
    });

    it('a delayed `free` throwing when its timer fires errors the output (a timer is not left to throw)', () => {
      const scheduler = newScheduler();
      const boom = new Error('cannot free');
      const a = Object.assign(new TestTicket('a'), {
        free: (): void => {
          throw boom;
        },
      });
      scheduler.run(({ cold, hot, expectObservable }) => {
        const source = hot('a-------', { a });
        const work = cold('d|', { d: workDone(1, { freeAfter: 3 }) });
        const result = source.pipe(workerPool({ concurrency: 1, work: () => work, scheduler }), map(summary));
        expectObservable(result).toBe('a--#', { a: 'a:done' }, boom);
      });
    });

    it('`work` is the exception on purpose: a factory that throws, or returns no ObservableInput, is a failed outcome', () => {
      const scheduler = newScheduler();
      const errors: unknown[] = [];
      scheduler.run(({ cold, expectObservable }) => {
        const source = cold('ab|', tickets('a', 'b'));
        const work = (t: TestTicket): Observable<Outcome<number>> => {
          if (t.name === 'a') throw new Error('no work');
          return undefined as unknown as Observable<Outcome<number>>;
        };
        const result = source.pipe(
          workerPool({ concurrency: 1, work }),
          map((r) => {
            if (r.outcome.status === 'failed') errors.push(r.outcome.error);
            return summary(r);
          }),
        );
        expectObservable(result).toBe('ab|', { a: 'a:failed', b: 'b:failed' });
      });
      expect(errors[0]).toEqual(new Error('no work'));
      expect(errors[1]).toBeInstanceOf(TypeError);
    });
  });

  describe('source error and completion with work in flight', () => {
    it('a source error errors at once, unsubscribes running work and frees running and waiting tickets', () => {
      const scheduler = newScheduler();
      const all = tickets('a', 'b', 'c');
      const boom = new Error('source broke');
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const work = cold('----d|', { d: workDone(1) });
        const source = cold('abc#', all, boom);
        expectObservable(source.pipe(workerPool({ concurrency: 2, work: () => work }))).toBe('---#', undefined, boom);
        expectSubscriptions(work.subscriptions).toBe(['^--!', '-^-!']);
      });
      expect(frees(all)).toEqual({ a: 1, b: 1, c: 1 });
    });

    it('completion waits for running and waiting work, then frees the delayed tickets at once', () => {
      const scheduler = newScheduler();
      const all = tickets('a', 'b');
      scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
        const work = cold('--d|', { d: workDone(1, { freeAfter: 50 }) });
        const source = cold('ab|', all);
        const result = source.pipe(workerPool({ concurrency: 1, work: () => work, scheduler }), map(summary));
        expectObservable(result).toBe('--a-(b|)', { a: 'a:done', b: 'b:done' });
        expectSubscriptions(work.subscriptions).toBe(['^-!', '--^-!']);
      });
      // Both were waiting out a 50 ms free; completion tore the pool down and let them go at 4.
      expect(all.a.events.map((e) => e.event)).toEqual(['start', 'hold', 'free']);
      expect(frees(all)).toEqual({ a: 1, b: 1 });
    });
  });

  it('unsubscribing downstream (take) unsubscribes the source and every running work, and frees what it held', () => {
    const scheduler = newScheduler();
    const all = tickets('a', 'b', 'c', 'd');
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const works: Record<string, Cold<Outcome<number>>> = {
        a: cold('-d|', { d: workDone(1) }),
        b: cold('-----d|', { d: workDone(2) }),
        c: cold('-----d|', { d: workDone(3) }),
        d: cold('d|', { d: workDone(4) }),
      };
      const source = cold('abcd----|', all);
      const result = source.pipe(workerPool({ concurrency: 2, work: (t) => works[t.name] }), map(summary), take(2));
      // a ends at 1, freeing a worker for c; then d waits; b ends at 6, the second result.
      expectObservable(result).toBe('-a----(b|)', { a: 'a:done', b: 'b:done' });
      expectSubscriptions(source.subscriptions).toBe('^-----!');
      expectSubscriptions(works.b.subscriptions).toBe('-^----!');
      expectSubscriptions(works.c.subscriptions).toBe('--^---!');
      expectSubscriptions(works.d.subscriptions).toBe([]);
    });
    expect(frees(all)).toEqual({ a: 1, b: 1, c: 1, d: 1 });
  });

  describe('synchronous and array inners', () => {
    it('work that answers synchronously ends before the next ticket; an array gives its first value', () => {
      const scheduler = newScheduler();
      scheduler.run(({ cold, expectObservable }) => {
        const source = cold('(abc)d|', tickets('a', 'b', 'c', 'd'));
        const work = (t: TestTicket): Outcome<string>[] | Observable<Outcome<string>> =>
          t.name === 'a'
            ? [workDone('A1'), workDone('A2')]
            : t.name === 'b'
              ? throwError(() => new Error('sync error'))
              : t.name === 'c'
                ? EMPTY
                : of(workDone('D'));
        const result = source.pipe(
          workerPool({ concurrency: 1, work }),
          map(
            (r) =>
              `${summary(r)}${r.outcome.status === 'done' ? `=${r.outcome.value}` : r.outcome.status === 'failed' ? `=${(r.outcome.error as Error).name}` : ''}`,
          ),
        );
        expectObservable(result).toBe('(abc)d|', { a: 'a:done=A1', b: 'b:failed=Error', c: 'c:failed=NoOutcomeError', d: 'd:done=D' });
      });
      expect(new NoOutcomeError()).toBeInstanceOf(Error);
    });

    it('a synchronous feedback loop runs flat: 100,000 tickets, each fed from the result before it', () => {
      const source = new Subject<TestTicket>();
      let last = '';
      source.pipe(workerPool({ concurrency: 1, work: (t) => of(workDone(t.name)) })).subscribe((r) => {
        last = r.ticket.name;
        const n = Number(r.ticket.name);
        if (n < 100_000) source.next(new TestTicket(String(n + 1)));
      });
      source.next(new TestTicket('0'));
      expect(last).toBe('100000');
    });
  });

  it('is first come, first served when fed from its own output, as mergeMap(fn, 1) is', () => {
    const order = (operator: 'pool' | 'mergeMap'): string[] => {
      const source = new Subject<string>();
      const first = new Subject<Outcome<string>>();
      const started: string[] = [];
      const work = (name: string): Observable<Outcome<string>> => {
        started.push(name);
        return name === 't1' ? first : of(workDone(name));
      };
      const fed = new Set<string>();
      const feedBack = (name: string): void => {
        // The first result feeds t4 back into the source while t2 and t3 wait.
        if (name !== 't1' || fed.has(name)) return;
        fed.add(name);
        source.next('t4');
      };
      if (operator === 'pool') {
        source
          .pipe(
            map((name) => new TestTicket(name)),
            workerPool({ concurrency: 1, work: (t) => work(t.name) }),
          )
          .subscribe((r) => feedBack(r.ticket.name));
      } else {
        source
          .pipe(
            mergeMap(
              (name) =>
                work(name).pipe(
                  take(1),
                  map(() => name),
                ),
              1,
            ),
          )
          .subscribe(feedBack);
      }
      source.next('t1');
      source.next('t2');
      source.next('t3');
      first.next(workDone('t1'));
      return started;
    };
    expect(order('mergeMap')).toEqual(['t1', 't2', 't3', 't4']);
    expect(order('pool')).toEqual(['t1', 't2', 't3', 't4']);
  });
});
