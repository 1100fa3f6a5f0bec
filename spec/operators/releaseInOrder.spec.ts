import { Observable, of, Subject, throwError } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { releaseInOrder, TRASH } from '@rxfleet/operators';

/** What a settle observable emits: an answer, or TRASH (marble `T`). */
type S = string | typeof TRASH;
const T: { T: typeof TRASH } = { T: TRASH };

describe('releaseInOrder', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('emits answers in arrival order though they land out of order (the doc diagram)', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c-------|');
      const sourceSubs = '      ^------------!';
      const a = cold<S>('        -----A|');
      const aSubs = '           -^----!';
      const b = cold<S>('          -B|');
      const bSubs = '           ---^!';
      const c = cold<S>('            -T|', T);
      const cSubs = '           -----^!';
      const expected = '        ------(AB)---|';

      const settles: Record<string, Observable<S>> = { a, b, c };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v]))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(c.subscriptions).toBe(cSubs);
    });
  });

  it('holds every later answer until the head answers, then releases them together', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c---------|');
      const sourceSubs = '      ^--------------!';
      const a = cold('           ---------A|');
      const aSubs = '           -^--------!';
      const b = cold('             -B|');
      const bSubs = '           ---^!';
      const c = cold('               --C|');
      const cSubs = '           -----^-!';
      const expected = '        ----------(ABC)|';

      const settles: Record<string, Observable<string>> = { a, b, c };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v]))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(c.subscriptions).toBe(cSubs);
    });
  });

  it('emits the first answer as a replacement of another type and stops listening after it', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a---b-----|');
      const sourceSubs = '      ^----------!';
      const a = cold('           --x-y-z|', { x: 10, y: 11, z: 12 });
      const aSubs = '           -^-!';
      const b = cold('               ---x-y|', { x: 20, y: 21 });
      const bSubs = '           -----^--!';
      const expected = '        ---x----y--|';

      const settles: Record<string, Observable<number>> = { a, b };
      const result = source.pipe(releaseInOrder<string, number>((v) => settles[v]));
      expectObservable(result).toBe(expected, { x: 10, y: 20 });
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
    });
  });

  it('passes each value its arrival index', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c-|');
      const sourceSubs = '      ^------!';
      const expected = '        -x-y-z-|';

      const result = source.pipe(releaseInOrder((v: string, i: number) => of(`${v}${i}`)));
      expectObservable(result).toBe(expected, { x: 'a0', y: 'b1', z: 'c2' });
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
    });
  });

  it('a trashed head lets the next value go at once, and is itself skipped', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-------|');
      const sourceSubs = '      ^----------!';
      const a = cold<S>('        -----T|', T);
      const aSubs = '           -^----!';
      const b = cold<S>('          -B|');
      const bSubs = '           ---^!';
      const expected = '        ------B----|';

      const settles: Record<string, Observable<S>> = { a, b };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v]))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
    });
  });

  it('a trashed middle keeps its place: nothing behind it overtakes what is ahead of it', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c--------|');
      const sourceSubs = '      ^-------------!';
      const a = cold<S>('        ---------A|');
      const aSubs = '           -^--------!';
      const b = cold<S>('          -T|', T);
      const bSubs = '           ---^!';
      const c = cold<S>('            -C|');
      const cSubs = '           -----^!';
      const expected = '        ----------(AC)|';

      const settles: Record<string, Observable<S>> = { a, b, c };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v]))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(c.subscriptions).toBe(cSubs);
    });
  });

  it('a settle observable that completes without emitting trashes its value in place', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c---------|');
      const sourceSubs = '      ^--------------!';
      const a = cold('           -A|');
      const aSubs = '           -^!';
      const b = cold('             -----|');
      const bSubs = '           ---^----!';
      const c = cold('               -C|');
      const cSubs = '           -----^!';
      const expected = '        --A-----C------|';

      const settles: Record<string, Observable<string>> = { a, b, c };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v]))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(c.subscriptions).toBe(cSubs);
    });
  });

  it('a settle observable that errors errors the output and unsubscribes the rest at once', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c-------|');
      const sourceSubs = '      ^------!';
      const a = cold('           -A|');
      const aSubs = '           -^!';
      const b = cold('             --------B|');
      const bSubs = '           ---^---!';
      const c = cold('               --#', undefined, new Error('read failed'));
      const cSubs = '           -----^-!';
      const expected = '        --A----#';

      const settles: Record<string, Observable<string>> = { a, b, c };
      const result = source.pipe(releaseInOrder((v: string) => settles[v]));
      expectObservable(result).toBe(expected, undefined, new Error('read failed'));
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(c.subscriptions).toBe(cSubs);
    });
  });

  it('a settle function that throws errors the output', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b---|');
      const sourceSubs = '      ^--!';
      const a = cold('           ----A|');
      const aSubs = '           -^-!';
      const expected = '        ---#';

      const boom = new Error('bad value');
      const result = source.pipe(
        releaseInOrder((v: string) => {
          if (v === 'b') throw boom;
          return a;
        }),
      );
      expectObservable(result).toBe(expected, undefined, boom);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
    });
  });

  it('a source error errors the output at once, dropping the line and unsubscribing pending work', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c-#');
      const sourceSubs = '      ^------!';
      const a = cold('           -A|');
      const aSubs = '           -^!';
      const b = cold('             --------B|');
      const bSubs = '           ---^---!';
      const c = cold('               -C|');
      const cSubs = '           -----^!';
      const expected = '        --A----#';

      const settles: Record<string, Observable<string>> = { a, b, c };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v]))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(c.subscriptions).toBe(cSubs);
    });
  });

  it('on source completion, waits for every pending value to settle and leave', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-|');
      const sourceSubs = '      ^----!';
      const a = cold('           -------A|');
      const aSubs = '           -^------!';
      const b = cold('             ---B|');
      const bSubs = '           ---^--!';
      const expected = '        --------(AB|)';

      const settles: Record<string, Observable<string>> = { a, b };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v]))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
    });
  });

  it('on source completion, completes when the last pending value is trashed', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-|');
      const sourceSubs = '      ^----!';
      const a = cold<S>('        -A|');
      const aSubs = '           -^!';
      const b = cold<S>('          -----T|', T);
      const bSubs = '           ---^----!';
      const expected = '        --A-----|';

      const settles: Record<string, Observable<S>> = { a, b };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v]))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
    });
  });

  it('completes at once when the source completes with nothing in the line', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a--|');
      const sourceSubs = '      ^---!';
      const a = cold('           -A|');
      const aSubs = '           -^!';
      const expected = '        --A-|';

      expectObservable(source.pipe(releaseInOrder(() => a))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
    });
  });

  it('on drain, hands on the line in order (unanswered as they arrived, trashed skipped) and completes', () => {
    testScheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c-d-e-----|');
      const sourceSubs = '      ^----------!';
      const a = cold<S>('        --A|');
      const aSubs = '           -^-!';
      const b = cold<S>('          ----------B|');
      const bSubs = '           ---^-------!';
      const c = cold<S>('            -C|');
      const cSubs = '           -----^!';
      const d = cold<S>('              -T|', T);
      const dSubs = '           -------^!';
      const e = cold<S>('                ----------E|');
      const eSubs = '           ---------^-!';
      const drain = hot('       -----------x---x--|');
      const drainSubs = '       ^----------!';
      const expected = '        ---A-------(bCe|)';

      const settles: Record<string, Observable<S>> = { a, b, c, d, e };
      const result = source.pipe(releaseInOrder((v: string) => settles[v], { drain }));
      expectObservable(result).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(c.subscriptions).toBe(cSubs);
      expectSubscriptions(d.subscriptions).toBe(dSubs);
      expectSubscriptions(e.subscriptions).toBe(eSubs);
      expectSubscriptions(drain.subscriptions).toBe(drainSubs);
    });
  });

  it('a drain that completes without emitting changes nothing', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b--------|');
      const sourceSubs = '      ^-----------!';
      const a = cold('           -----A|');
      const aSubs = '           -^----!';
      const b = cold('             -B|');
      const bSubs = '           ---^!';
      const quiet = cold('      ---|');
      const quietSubs = '       ^--!';
      const expected = '        ------(AB)--|';

      const settles: Record<string, Observable<string>> = { a, b };
      expectObservable(source.pipe(releaseInOrder((v: string) => settles[v], { drain: quiet }))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(quiet.subscriptions).toBe(quietSubs);
    });
  });

  it('a drain that errors errors the output and unsubscribes everything', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b--------|');
      const sourceSubs = '      ^----!';
      const a = cold('           -----A|');
      const aSubs = '           -^---!';
      const b = cold('             -B|');
      const bSubs = '           ---^!';
      const failing = cold('    -----#', undefined, new Error('drain failed'));
      const failingSubs = '     ^----!';
      const expected = '        -----#';

      const settles: Record<string, Observable<string>> = { a, b };
      const result = source.pipe(releaseInOrder((v: string) => settles[v], { drain: failing }));
      expectObservable(result).toBe(expected, undefined, new Error('drain failed'));
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(failing.subscriptions).toBe(failingSubs);
    });
  });

  it('a drain that has already fired completes at once without subscribing to the source', () => {
    testScheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-|');
      const expected = '        |';

      expectObservable(source.pipe(releaseInOrder((v: string) => of(v), { drain: of(0) }))).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe([]);
    });
  });

  it('unsubscribing tears down the source, every pending settle observable and the drain', () => {
    testScheduler.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const source = cold('     -a-b-c-------|');
      const sourceSubs = '      ^------!';
      const a = cold('           ---------A|');
      const aSubs = '           -^-----!';
      const b = cold('             -B|');
      const bSubs = '           ---^!';
      const c = cold('               -----C|');
      const cSubs = '           -----^-!';
      const drain = hot('       -------------x|');
      const drainSubs = '       ^------!';
      const unsub = '           -------!';
      const expected = '        --------';

      const settles: Record<string, Observable<string>> = { a, b, c };
      const result = source.pipe(releaseInOrder((v: string) => settles[v], { drain }));
      expectObservable(result, unsub).toBe(expected);
      expectSubscriptions(source.subscriptions).toBe(sourceSubs);
      expectSubscriptions(a.subscriptions).toBe(aSubs);
      expectSubscriptions(b.subscriptions).toBe(bSubs);
      expectSubscriptions(c.subscriptions).toBe(cSubs);
      expectSubscriptions(drain.subscriptions).toBe(drainSubs);
    });
  });

  it('keeps arrival order when a consumer feeds the source synchronously from an emission', () => {
    const source = new Subject<string>();
    const headAnswer = new Subject<string>();
    const seen: string[] = [];
    let completed = false;
    source.pipe(releaseInOrder((v: string) => (v === 'a' ? headAnswer : of(v.toUpperCase())))).subscribe({
      next: (v) => {
        seen.push(v);
        // Re-enters while B is still waiting to be emitted behind A.
        if (v === 'A') source.next('c');
      },
      complete: () => (completed = true),
    });
    source.next('a');
    source.next('b');
    expect(seen).toEqual([]);
    headAnswer.next('A');
    expect(seen).toEqual(['A', 'B', 'C']);
    expect(headAnswer.observed).toBe(false);
    source.complete();
    expect(completed).toBe(true);
  });

  it('runs a synchronous feedback loop flat rather than a stack frame deeper per value', () => {
    const source = new Subject<number>();
    let last = -1;
    source.pipe(releaseInOrder((n: number) => of(n))).subscribe((n) => {
      last = n;
      if (n < 100_000) source.next(n + 1);
    });
    source.next(0);
    expect(last).toBe(100_000);
  });

  it('accepts any ObservableInput as settle work: promises, arrays, a throwError', async () => {
    const out: string[] = [];
    const errors: unknown[] = [];
    await new Promise<void>((resolve) => {
      of('a', 'b', 'c')
        .pipe(
          releaseInOrder((v: string) =>
            v === 'a' ? new Promise<string>((r) => setTimeout(() => r('A'), 5)) : v === 'b' ? ['B', 'ignored'] : Promise.resolve('C'),
          ),
        )
        .subscribe({ next: (v) => out.push(v), complete: resolve });
    });
    expect(out).toEqual(['A', 'B', 'C']);

    of('a')
      .pipe(releaseInOrder(() => throwError(() => new Error('no'))))
      .subscribe({ error: (e: unknown) => errors.push(e) });
    expect(errors).toEqual([new Error('no')]);
  });
});
