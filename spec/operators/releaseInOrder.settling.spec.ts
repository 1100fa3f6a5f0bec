import { Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { Settling, TRASH, releaseInOrder } from '@rxfleet/operators';

/** A value answered by whoever holds it, at a time the test chooses. */
class Pending implements Settling<string> {
  private tell: ((answer: string | typeof TRASH) => void) | undefined;
  private answer: string | typeof TRASH | undefined;

  constructor(readonly name: string) {}

  whenSettled(tell: (answer: string | typeof TRASH) => void): void {
    if (this.answer !== undefined) tell(this.answer);
    else this.tell = tell;
  }

  settle(answer: string | typeof TRASH): void {
    this.answer = answer;
    this.tell?.(answer);
  }
}

const named = (x: string | Pending): string => (typeof x === 'string' ? x : `<${x.name}>`);

describe('releaseInOrder, values that settle themselves', () => {
  let ts: TestScheduler;
  beforeEach(() => (ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected))));

  it('emits what each value settles with in arrival order, though they settle out of order (the doc diagram)', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const values = { a: new Pending('a'), b: new Pending('b'), c: new Pending('c') };
      const source = cold('-a-b-c-------|', values);
      ts.schedule(() => values.a.settle('A'), 5);
      ts.schedule(() => values.b.settle('B'), 3);
      ts.schedule(() => values.c.settle(TRASH), 6);
      expectObservable(source.pipe(releaseInOrder<Pending>())).toBe('-----(AB)----|', { A: 'A', B: 'B' });
      expectSubscriptions(source.subscriptions).toBe('^------------!');
    });
  });

  it('a value settled already when it arrives leaves as soon as everything ahead of it has; a second settlement changes nothing', () => {
    ts.run(({ cold, expectObservable }) => {
      const a = new Pending('a');
      const b = new Pending('b');
      b.settle('B');
      ts.schedule(() => a.settle('A'), 4);
      ts.schedule(() => a.settle('again'), 5);
      expectObservable(cold('ab------|', { a, b }).pipe(releaseInOrder<Pending>())).toBe('----(AB)|', { A: 'A', B: 'B' });
    });
  });

  it('a trashed value keeps its place: nothing behind it overtakes what is ahead of it', () => {
    ts.run(({ cold, expectObservable }) => {
      const values = { a: new Pending('a'), b: new Pending('b'), c: new Pending('c') };
      ts.schedule(() => values.b.settle(TRASH), 1);
      ts.schedule(() => values.c.settle('C'), 2);
      ts.schedule(() => values.a.settle('A'), 6);
      expectObservable(cold('abc|', values).pipe(releaseInOrder<Pending>())).toBe('------(AC|)', { A: 'A', C: 'C' });
    });
  });

  it('on drain, hands on the line in order (unsettled values as they arrived, trashed skipped), ignores later settlements and completes', () => {
    ts.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const values = { a: new Pending('a'), b: new Pending('b'), c: new Pending('c'), d: new Pending('d') };
      ts.schedule(() => values.b.settle('B'), 1);
      ts.schedule(() => values.c.settle(TRASH), 1);
      ts.schedule(() => values.a.settle('A'), 5);
      const source = cold('abcd------|', values);
      const drain = hot('   ----x----');
      expectObservable(source.pipe(releaseInOrder<Pending>({ drain }))).toBe('----(abd|)', { a: values.a, b: 'B', d: values.d });
      expectSubscriptions(source.subscriptions).toBe('^---!');
      expectSubscriptions(drain.subscriptions).toBe('^---!');
    });
  });

  it('a source error errors the output at once; whenSettled throwing errors the output', () => {
    ts.run(({ cold, expectObservable }) => {
      const a = new Pending('a');
      expectObservable(cold('a-#', { a }).pipe(releaseInOrder<Pending>())).toBe('--#');
      const broken: Settling<string> = {
        whenSettled: () => {
          throw new Error('broken');
        },
      };
      expectObservable(cold('x-|', { x: broken }).pipe(releaseInOrder())).toBe('#', undefined, new Error('broken'));
    });
  });

  it('keeps arrival order when a consumer feeds the source synchronously from an emission, and runs such a loop flat', () => {
    const source = new Subject<Pending>();
    const out: string[] = [];
    let fed = 0;
    source.pipe(releaseInOrder<Pending>()).subscribe((value) => {
      out.push(named(value));
      // Each emission feeds a new value, settled at once, until 20,000: a stack frame deeper per
      // value would overflow.
      if (fed < 20_000) {
        const next = new Pending(`v${++fed}`);
        next.settle(`V${fed}`);
        source.next(next);
      }
    });
    const first = new Pending('first');
    const second = new Pending('second');
    source.next(first);
    source.next(second);
    second.settle('S');
    first.settle('F');
    expect(out.slice(0, 4)).toEqual(['F', 'S', 'V1', 'V2']);
    expect(out).toHaveLength(20_002);
  });
});
