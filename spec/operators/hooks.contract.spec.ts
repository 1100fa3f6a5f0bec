import { NEVER, Observable, Subject, UnsubscriptionError, concat, config, of, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import {
  AdmissionLedger,
  Attempt,
  PoolTicket,
  Settling,
  Trash,
  admit,
  debounceByKey,
  pacedSweep,
  pauseWhen,
  readPerKey,
  releaseInOrder,
  retryLadder,
  valueTicket,
  workDone,
  workerPool,
} from '@rxfleet/operators';
import { TestTicket } from '@rxfleet/operators/testing';
import { newScheduler } from '../helpers/marbles';
import { failOnUnhandledErrors } from './unhandledErrors';

// The rxjs contract for every callback of the user's that an operator calls (a hook, a key
// selector, a predicate, a ticket's methods): a throw errors the output, once; the callback is not
// called again, not even at teardown; and nothing comes out of `subscribe()`, however synchronous
// the source. Each case makes its hook throw at its first call, so "called once" is "not called
// again".

type Hook = (...args: unknown[]) => never;

interface Case {
  name: string;
  /** The pipeline with `hook` in the place under test; `ts` times what needs timing. */
  make: (hook: Hook, ts: TestScheduler) => Observable<unknown>;
}

const firstLetter = (v: string): string => v[0];
const failure: Attempt<string> = { key: 'k', ok: false };

/** A value that settles itself through `whenSettled`: the hook. */
const settling = (whenSettled: Hook): Settling<string> => ({
  whenSettled: whenSettled as (tell: (answer: string | Trash) => void) => void,
});

/** A ticket whose `method` is the hook. */
function ticketWith(method: 'start' | 'hold' | 'free', hook: Hook): PoolTicket {
  const ticket = new TestTicket('a');
  return Object.assign(ticket, { [method]: hook });
}

const cases: Case[] = [
  { name: "admit: the ledger's `key`", make: (hook) => of('a').pipe(admit(new AdmissionLedger({ key: hook, window: 1, capacity: 1 }))) },
  {
    name: 'admit: `onRefuse`',
    make: (hook) =>
      of('a', 'a', 'a').pipe(admit(new AdmissionLedger({ key: (v: string) => v, window: 100, capacity: 5 }), { onRefuse: hook })),
  },
  { name: 'pauseWhen: `onDrop`', make: (hook) => of(1, 2, 3).pipe(pauseWhen(of(true), { onDrop: hook })) },
  {
    name: 'workerPool: `onBusy`',
    make: (hook) => of(valueTicket('a'), valueTicket('b')).pipe(workerPool({ concurrency: 1, work: () => NEVER, onBusy: hook })),
  },
  {
    name: "workerPool: a ticket's `start`",
    make: (hook) => of(ticketWith('start', hook), valueTicket('b')).pipe(workerPool({ concurrency: 1, work: () => [workDone(1)] })),
  },
  {
    name: "workerPool: a ticket's `hold`",
    make: (hook, ts) =>
      of(ticketWith('hold', hook)).pipe(workerPool({ concurrency: 1, work: () => [workDone(1, { freeAfter: 5 })], scheduler: ts })),
  },
  {
    name: "workerPool: a ticket's `free`",
    make: (hook) => of(ticketWith('free', hook), valueTicket('b')).pipe(workerPool({ concurrency: 1, work: () => [workDone(1)] })),
  },
  { name: 'readPerKey: `key`', make: (hook) => of('a1', 'a2').pipe(readPerKey({ key: hook, read: () => NEVER })) },
  {
    name: 'readPerKey: `supersedes`',
    make: (hook) => of('a1', 'a2', 'a3').pipe(readPerKey({ key: firstLetter, read: () => NEVER, supersedes: hook })),
  },
  {
    name: 'readPerKey: `fresh`',
    make: (hook) => of('a1', 'a2', 'a3').pipe(readPerKey({ key: firstLetter, read: () => NEVER, fresh: hook })),
  },
  { name: 'releaseInOrder: `settle`', make: (hook) => of(1, 2).pipe(releaseInOrder(hook)) },
  { name: 'releaseInOrder: a value’s `whenSettled`', make: (hook) => of(settling(hook), settling(hook)).pipe(releaseInOrder()) },
  { name: 'debounceByKey: `key`', make: (hook, ts) => of('a1', 'a2').pipe(debounceByKey({ key: hook, scheduler: ts })) },
  {
    name: 'debounceByKey: `collapsible`',
    make: (hook, ts) => of('a1', 'a2').pipe(debounceByKey({ key: firstLetter, collapsible: hook, scheduler: ts })),
  },
  {
    name: 'debounceByKey: `superseded`',
    make: (hook, ts) => of('a1', 'a2', 'a3', 'a4').pipe(debounceByKey({ key: firstLetter, superseded: hook, scheduler: ts })),
  },
  {
    name: 'retryLadder: `onPendingChange`',
    make: (hook, ts) => of(failure, { key: 'j', ok: false }).pipe(retryLadder({ onPendingChange: hook, scheduler: ts })),
  },
  {
    name: 'pacedSweep: `failureDelay`',
    make: (hook, ts) =>
      pacedSweep({ list: () => throwError(() => new Error('listing failed')), delay: 1, interval: 10, failureDelay: hook, scheduler: ts }),
  },
];

describe("a callback that throws errors the output once and is never called again (the kit's edges)", () => {
  failOnUnhandledErrors();

  it.each(cases)('$name, from a synchronous source: one error, one call, nothing out of subscribe() or unsubscribe()', ({ make }) => {
    const ts = newScheduler();
    const boom = new Error('hook broke');
    let calls = 0;
    const hook = ((): never => {
      calls++;
      throw boom;
    }) as Hook;
    const seen: unknown[] = [];
    ts.run(({ flush }) => {
      const pipeline = make(hook, ts);
      let subscription = undefined as { unsubscribe(): void } | undefined;
      expect(() => {
        subscription = pipeline.subscribe({
          next: () => seen.push('next'),
          error: (e) => seen.push(e),
          complete: () => seen.push('complete'),
        });
      }).not.toThrow();
      flush();
      expect(() => subscription?.unsubscribe()).not.toThrow();
    });
    expect(seen.filter((s) => s !== 'next')).toEqual([boom]);
    expect(calls).toBe(1);
  });
});

describe('at the end of the output, the calls that put things back', () => {
  failOnUnhandledErrors();

  it("retryLadder: `onPendingChange` throwing when a retry's timer fires errors the output, and teardown does not call it again", () => {
    const ts = newScheduler();
    const boom = new Error('gauge broke');
    const told: number[] = [];
    ts.run(({ hot, expectObservable }) => {
      const source = hot<Attempt<string>>('f-g---', { f: failure, g: { key: 'j', ok: false } });
      const onPendingChange = (n: number): void => {
        told.push(n);
        if (n === 1 && told.length > 2) throw boom;
      };
      expectObservable(source.pipe(retryLadder({ fast: 3, onPendingChange, scheduler: ts }))).toBe('---#', undefined, boom);
    });
    // 1 (f), 2 (g), then 1 as f's retry falls due: it threw there, and the 1 left pending at teardown is never told as 0.
    expect(told).toEqual([1, 2, 1]);
  });

  it('retryLadder: the source completing with retries pending reports 0 before completing, so a throw then errors the output', () => {
    const ts = newScheduler();
    const boom = new Error('gauge broke at 0');
    const told: number[] = [];
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold<Attempt<string>>('f-|', { f: failure });
      const onPendingChange = (n: number): void => {
        told.push(n);
        if (n === 0) throw boom;
      };
      expectObservable(source.pipe(retryLadder({ fast: 5, onPendingChange, scheduler: ts }))).toBe('--#', undefined, boom);
      expectSubscriptions(source.subscriptions).toBe('^-!');
    });
    expect(told).toEqual([1, 0]);
  });

  it('workerPool: keys held after their work are freed as the pool completes, so a `free` that throws then errors the output', () => {
    const ts = newScheduler();
    const boom = new Error('free broke');
    const a = Object.assign(new TestTicket('a'), {
      free: (): never => {
        throw boom;
      },
    });
    const b = new TestTicket('b');
    ts.run(({ cold, expectObservable }) => {
      const source = cold('ab|', { a, b });
      const work = (): Observable<ReturnType<typeof workDone<number>>> => cold('-d|', { d: workDone(1, { freeAfter: 10 }) });
      expectObservable(source.pipe(workerPool({ concurrency: 2, work, scheduler: ts }))).toBe(
        '-a(b#)',
        { a: expect.anything(), b: expect.anything() },
        boom,
      );
    });
    // b, held too, is still freed, once.
    expect(b.frees).toBe(1);
  });

  it('workerPool: `onBusy` throwing as it is told 0 when you unsubscribe comes out of unsubscribe, as a throwing finalizer does', () => {
    const source = new Subject<PoolTicket>();
    const subscription = source
      .pipe(
        workerPool({
          concurrency: 1,
          work: () => NEVER,
          onBusy: (n) => {
            if (n === 0) throw new Error('gauge broke at 0');
          },
        }),
      )
      .subscribe();
    source.next(valueTicket('a'));
    expect(() => subscription.unsubscribe()).toThrow(UnsubscriptionError);
  });
});

describe('after the output has errored, a call that puts things back and throws', () => {
  let unhandled: unknown[];
  beforeEach(() => {
    unhandled = [];
    config.onUnhandledError = (error) => unhandled.push(error);
  });
  afterEach(() => {
    config.onUnhandledError = null;
  });

  it("goes to rxjs's unhandled-error path, never out of subscribe(): retryLadder's `onPendingChange`", () => {
    const sourceError = new Error('reports ended badly');
    const gaugeError = new Error('gauge broke at 0');
    const seen: unknown[] = [];
    const source = concat(
      of(failure),
      throwError(() => sourceError),
    );
    const pipeline = source.pipe(
      retryLadder({
        onPendingChange: (n) => {
          if (n === 0) throw gaugeError;
        },
      }),
    );
    expect(() => pipeline.subscribe({ error: (e) => seen.push(e) })).not.toThrow();
    expect(seen).toEqual([sourceError]);
    expect(unhandled).toEqual([gaugeError]);
  });

  it("goes to rxjs's unhandled-error path, never out of subscribe(): workerPool's tickets' `free` and `onBusy`", () => {
    const sourceError = new Error('tickets ended badly');
    const freeError = new Error('free broke');
    const busyError = new Error('gauge broke at 0');
    const seen: unknown[] = [];
    const a = Object.assign(new TestTicket('a'), {
      free: (): never => {
        throw freeError;
      },
    });
    const pipeline = concat(
      of<PoolTicket>(a),
      throwError(() => sourceError),
    ).pipe(
      workerPool({
        concurrency: 1,
        work: () => NEVER,
        onBusy: (n) => {
          if (n === 0) throw busyError;
        },
      }),
    );
    expect(() => pipeline.subscribe({ error: (e) => seen.push(e) })).not.toThrow();
    expect(seen).toEqual([sourceError]);
    expect(unhandled).toEqual([freeError, busyError]);
  });
});

describe('a bad answer from a callback is an error of the output, at once', () => {
  failOnUnhandledErrors();

  it.each([Number.NaN, -1, Infinity, 2 ** 31])(
    'pacedSweep: `failureDelay` returning %p errors the output with a RangeError naming it',
    (ms) => {
      const ts = newScheduler();
      ts.run(({ expectObservable }) => {
        const sweep = pacedSweep({
          list: () => throwError(() => new Error('no')),
          delay: 1,
          interval: 10,
          failureDelay: () => ms,
          scheduler: ts,
        });
        expectObservable(sweep).toBe(
          '#',
          undefined,
          new RangeError(`pacedSweep: failureDelay(1) must return a number of milliseconds from 0 to ${2 ** 31 - 1}, got ${ms}`),
        );
      });
    },
  );

  it("workerPool: an outcome's `freeAfter` that is not a wait (built without workDone) fails that ticket, and frees it at once", () => {
    const ts = newScheduler();
    const a = new TestTicket('a', { now: () => ts.now() });
    ts.run(({ cold, expectObservable }) => {
      const source = cold('a|', { a });
      const result = source.pipe(
        workerPool({ concurrency: 1, work: () => cold('-d|', { d: { status: 'done', value: 1, freeAfter: -5 } as const }), scheduler: ts }),
      );
      expectObservable(result).toBe('-(r|)', {
        r: {
          ticket: a,
          outcome: {
            status: 'failed',
            error: new RangeError(`workerPool: an outcome's freeAfter must be from 0 to ${2 ** 31 - 1} ms, got -5`),
          },
        },
      });
    });
    expect(a.events).toEqual([
      { event: 'start', at: 0 },
      { event: 'free', at: 1 },
    ]);
  });
});
