import { Observable, Subject, map, startWith, tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { SweepEvent, pacedSweep } from '@rxfleet/operators';
import { tracking } from '../helpers/marbles';

const item = (round: number, name: string, paced: boolean): SweepEvent<string> => ({ kind: 'item', round, item: name, paced });
const ok = (round: number): SweepEvent<string> => ({ kind: 'end', round, ok: true });
const failed = (round: number, error: unknown = 'error'): SweepEvent<string> => ({ kind: 'end', round, ok: false, error });

/** A `list` serving the n-th listing to round n, remembering which rounds asked. */
function listings(...lists: Observable<string>[]): { list: (round: number) => Observable<string>; rounds: number[] } {
  const rounds: number[] = [];
  const list = (round: number): Observable<string> => {
    rounds.push(round);
    const listing = lists[round - 1];
    if (listing === undefined) throw new Error(`no listing for round ${round}`);
    return listing;
  };
  return { list, rounds };
}

describe('pacedSweep', () => {
  let ts: TestScheduler;
  beforeEach(() => {
    ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it("behaves as its doc comment's diagram says (E marks the end of a round)", () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const listing = cold('   -(ab|)');
      const subs = ['                       ^!', '                       -----^!', '                       ------------^!'];
      const unsub = '          ^-----------------!';
      const expected = '       -(abE)a-(bE)-a-(bE)';
      const sweep = pacedSweep({ list: () => listing, delay: 2, interval: 4, scheduler: ts });
      expectObservable(sweep.pipe(map((e) => (e.kind === 'item' ? e.item : 'E'))), unsub).toBe(expected);
      expectSubscriptions(listing.subscriptions).toBe(subs);
    });
  });

  it('runs round 1 fast, then paces each round after `interval`: items buffered, handed on `delay` apart, no trailing delay', () => {
    let rounds: number[] = [];
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('             (ab|)');
      const second = cold('            (abc) 50ms d 300ms |');
      const third = cold('             a 299ms (b|)');
      const served = listings(first, second, third);
      rounds = served.rounds;
      const unsub = '                  ^ 2699ms !';
      const expected = '               (ABE) 995ms a 99ms b 99ms c 99ms d 55ms e 999ms f 299ms (gh)';
      const events = {
        A: item(1, 'a', false),
        B: item(1, 'b', false),
        E: ok(1),
        a: item(2, 'a', true),
        b: item(2, 'b', true),
        c: item(2, 'c', true),
        d: item(2, 'd', true),
        e: ok(2),
        f: item(3, 'a', true),
        g: item(3, 'b', true),
        h: ok(3),
      };
      expectObservable(pacedSweep({ list: served.list, delay: 100, interval: 1000, scheduler: ts }), unsub).toBe(expected, events);
      expectSubscriptions(first.subscriptions).toBe('(^!)');
      expectSubscriptions(second.subscriptions).toBe('1000ms ^ 355ms !');
      expectSubscriptions(third.subscriptions).toBe(' 2356ms ^ 299ms !');
    });
    expect(rounds).toEqual([1, 2, 3]);
  });

  it('ends a failed round at once, hands on nothing more, and follows it with a fast round after failureDelay(n)', () => {
    const delays: number[] = [];
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const l1 = cold('   (ab|)');
      const l2 = cold('   (abc) 150ms #');
      const l3 = cold('   50ms #');
      const l4 = cold('   (ab) 50ms |');
      const l5 = cold('   #');
      const l6 = cold('   -');
      const served = listings(l1, l2, l3, l4, l5, l6);
      const unsub = '     ^ 2699ms !';
      const expected = '  (ABE) 995ms a 99ms b 54ms F 149ms G 199ms (cd) 50ms H 999ms I';
      const events = {
        A: item(1, 'a', false),
        B: item(1, 'b', false),
        E: ok(1),
        a: item(2, 'a', true),
        b: item(2, 'b', true),
        F: failed(2),
        G: failed(3),
        c: item(4, 'a', false),
        d: item(4, 'b', false),
        H: ok(4),
        I: failed(5),
      };
      const failureDelay = (n: number): number => {
        delays.push(n);
        return n * 100;
      };
      expectObservable(pacedSweep({ list: served.list, delay: 100, interval: 1000, failureDelay, scheduler: ts }), unsub).toBe(
        expected,
        events,
      );
      expectSubscriptions(l1.subscriptions).toBe('(^!)');
      expectSubscriptions(l2.subscriptions).toBe('1000ms ^ 154ms !');
      expectSubscriptions(l3.subscriptions).toBe('1255ms ^ 49ms !');
      expectSubscriptions(l4.subscriptions).toBe('1505ms ^ 53ms !');
      expectSubscriptions(l5.subscriptions).toBe('2559ms (^!)');
      expectSubscriptions(l6.subscriptions).toBe('2659ms ^ 40ms !');
    });
    // Two failures in a row, then a success resets the count.
    expect(delays).toEqual([1, 2, 1]);
  });

  it('backs off 5 s, 10 s, 20 s ... up to 5 min by default while every round fails', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const listing = cold('#');
      const unsub = '     ^ 999999ms !';
      const expected = '  A 4999ms B 9999ms C 19999ms D 39999ms E 79999ms F 159999ms G 299999ms H 299999ms I';
      const events = {
        A: failed(1),
        B: failed(2),
        C: failed(3),
        D: failed(4),
        E: failed(5),
        F: failed(6),
        G: failed(7),
        H: failed(8),
        I: failed(9),
      };
      expectObservable(pacedSweep({ list: () => listing, delay: 100, interval: 1000, scheduler: ts }), unsub).toBe(expected, events);
      expectSubscriptions(listing.subscriptions).toBe(
        [0, 5000, 15000, 35000, 75000, 155000, 315000, 615000, 915000].map((at) => (at === 0 ? '(^!)' : `${at}ms (^!)`)),
      );
    });
  });

  it('treats a `list` that throws as a failed round', () => {
    const boom = new Error('cannot list');
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const second = cold('-');
      const list = (round: number): Observable<string> => {
        if (round === 1) throw boom;
        return second;
      };
      const unsub = '     ^ 199ms !';
      const expected = '  F';
      expectObservable(pacedSweep({ list, delay: 10, interval: 1000, failureDelay: () => 100, scheduler: ts }), unsub).toBe(expected, {
        F: failed(1, boom),
      });
      expectSubscriptions(second.subscriptions).toBe('100ms ^ 99ms !');
    });
  });

  it('abandons a round or a wait on `restart` without an end, resets the failure count, and starts a fast round at once', () => {
    const delays: number[] = [];
    let rounds: number[] = [];
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const restart = cold('1150ms r 499ms r 249ms r');
      const l1 = cold('     (ab|)');
      const l2 = cold('     (abc) 500ms |');
      const l3 = cold('     (ab|)');
      const l4 = cold('     50ms #');
      const l5 = cold('     #');
      const l6 = cold('     #');
      const l7 = cold('     -');
      const served = listings(l1, l2, l3, l4, l5, l6, l7);
      rounds = served.rounds;
      const unsub = '       ^ 2299ms !';
      const expected = '    (ABE) 995ms a 99ms b 49ms (cdC) 545ms F 99ms G 99ms H';
      const events = {
        A: item(1, 'a', false),
        B: item(1, 'b', false),
        E: ok(1),
        a: item(2, 'a', true),
        b: item(2, 'b', true),
        c: item(3, 'a', false),
        d: item(3, 'b', false),
        C: ok(3),
        F: failed(4),
        G: failed(5),
        H: failed(6),
      };
      const failureDelay = (n: number): number => {
        delays.push(n);
        return n * 100;
      };
      const sweep = pacedSweep({ list: served.list, delay: 100, interval: 1000, restart, failureDelay, scheduler: ts });
      expectObservable(sweep, unsub).toBe(expected, events);
      expectSubscriptions(restart.subscriptions).toBe('^ 2299ms !');
      expectSubscriptions(l1.subscriptions).toBe('(^!)');
      // Abandoned at 1150 ms while still listing, with c buffered: c is never handed on.
      expectSubscriptions(l2.subscriptions).toBe('1000ms ^ 149ms !');
      expectSubscriptions(l3.subscriptions).toBe('1150ms (^!)');
      // Started by the restart at 1650 ms, abandoning the wait that would have ended at 2150 ms.
      expectSubscriptions(l4.subscriptions).toBe('1650ms ^ 49ms !');
      expectSubscriptions(l5.subscriptions).toBe('1800ms (^!)');
      // Started by the restart at 1900 ms, abandoning the failure wait that would have ended at 2000 ms.
      expectSubscriptions(l6.subscriptions).toBe('1900ms (^!)');
      expectSubscriptions(l7.subscriptions).toBe('2000ms ^ 299ms !');
    });
    expect(rounds).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // The restart at 1900 ms reset the count: round 6's failure is the first in a row again.
    expect(delays).toEqual([1, 2, 1]);
  });

  it('stops handing on the moment whoever reads an item restarts the sweep', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const l1 = cold('    (abc|)');
      const l2 = cold('    (xy|)');
      const served = listings(l1, l2);
      const unsub = '      ^ 99ms !';
      const expected = '   (axyE)';
      const events = { a: item(1, 'a', false), x: item(2, 'x', false), y: item(2, 'y', false), E: ok(2) };
      const restart = new Subject<void>();
      const sweep = pacedSweep({ list: served.list, delay: 100, interval: 1000, restart, scheduler: ts }).pipe(
        tap((e) => {
          if (e.kind === 'item' && e.round === 1) restart.next();
        }),
      );
      expectObservable(sweep, unsub).toBe(expected, events);
      expectSubscriptions(l1.subscriptions).toBe('(^!)');
      expectSubscriptions(l2.subscriptions).toBe('(^!)');
    });
  });

  it('starts round 1 from a restart that emits synchronously on subscription, rather than abandoning it', () => {
    let rounds: number[] = [];
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const later = cold('-');
      const listing = cold('a');
      const served = listings(listing);
      rounds = served.rounds;
      const unsub = '     ^ 99ms !';
      const expected = '  a';
      const sweep = pacedSweep({ list: served.list, delay: 10, interval: 1000, restart: later.pipe(startWith('now')), scheduler: ts });
      expectObservable(sweep, unsub).toBe(expected, { a: item(1, 'a', false) });
      expectSubscriptions(later.subscriptions).toBe('^ 99ms !');
      expectSubscriptions(listing.subscriptions).toBe('^ 99ms !');
    });
    expect(rounds).toEqual([1]);
  });

  it('ignores `restart` completing', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const restart = cold('50ms |');
      const listing = cold('100ms a');
      const unsub = '      ^ 199ms !';
      const expected = '   100ms a';
      const sweep = pacedSweep({ list: () => listing, delay: 10, interval: 1000, restart, scheduler: ts });
      expectObservable(sweep, unsub).toBe(expected, { a: item(1, 'a', false) });
      expectSubscriptions(restart.subscriptions).toBe('^ 49ms !');
      expectSubscriptions(listing.subscriptions).toBe('^ 199ms !');
    });
  });

  it('errors when `restart` errors, tearing down the round', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const restart = cold('50ms #', undefined, 'broken');
      const listing = cold('-');
      const expected = '   50ms #';
      expectObservable(pacedSweep({ list: () => listing, delay: 10, interval: 1000, restart, scheduler: ts })).toBe(
        expected,
        undefined,
        'broken',
      );
      expectSubscriptions(restart.subscriptions).toBe('^ 49ms !');
      expectSubscriptions(listing.subscriptions).toBe('^ 49ms !');
    });
  });

  it('errors when `failureDelay` throws', () => {
    const boom = new Error('no delay');
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const listing = cold('10ms #');
      const expected = '   10ms #';
      const failureDelay = (): number => {
        throw boom;
      };
      expectObservable(pacedSweep({ list: () => listing, delay: 10, interval: 1000, failureDelay, scheduler: ts })).toBe(
        expected,
        undefined,
        boom,
      );
      expectSubscriptions(listing.subscriptions).toBe('^ 9ms !');
    });
  });

  it('hands on a listing that is a promise of an array one item at a time, paced in a paced round', async () => {
    const scheduler = new TestScheduler(() => undefined);
    // Rounds 1 and 2 list names; round 3 never answers, so the sweep stops there for the test.
    const names: string[][] = [
      ['a', 'b', 'c'],
      ['d', 'e'],
    ];
    const listNames = (round: number): Promise<string[]> =>
      round <= names.length ? Promise.resolve(names[round - 1]) : new Promise(() => undefined);
    const events: string[] = [];
    const sweep$: Observable<SweepEvent<string>> = pacedSweep({ list: listNames, delay: 2, interval: 4, scheduler });
    const subscription = sweep$.subscribe((e) => {
      const item: string | undefined = e.kind === 'item' ? e.item : undefined;
      events.push(`${item ?? `E${e.round}`}@${scheduler.now()}`);
    });
    // A promise answers on a microtask, between the virtual-time flushes that run the pacing.
    for (let turn = 0; turn < 4; turn++) {
      await Promise.resolve();
      scheduler.flush();
    }
    subscription.unsubscribe();
    expect(events).toEqual(['a@0', 'b@0', 'c@0', 'E1@0', 'd@4', 'e@6', 'E2@6']);
  });

  it('fails the round whose promise resolves to something that is not a listing', async () => {
    const scheduler = new TestScheduler(() => undefined);
    const events: SweepEvent<string>[] = [];
    const list = (): Promise<string[]> => Promise.resolve(42 as unknown as string[]);
    const subscription = pacedSweep({ list, delay: 2, interval: 4, scheduler }).subscribe((e) => events.push(e));
    await Promise.resolve();
    await Promise.resolve();
    subscription.unsubscribe();
    expect(events).toEqual([{ kind: 'end', round: 1, ok: false, error: expect.any(TypeError) }]);
  });

  it('tears down the listing, the pacing timer and `restart` when unsubscribed mid-round', () => {
    const clock = tracking(ts);
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const restart = cold('-');
      const l1 = cold('    (ab|)');
      const l2 = cold('    (abc) 500ms |');
      const served = listings(l1, l2);
      const unsub = '      ^ 1149ms !';
      const expected = '   (ABE) 995ms a 99ms b';
      const events = {
        A: item(1, 'a', false),
        B: item(1, 'b', false),
        E: ok(1),
        a: item(2, 'a', true),
        b: item(2, 'b', true),
      };
      const sweep = pacedSweep({ list: served.list, delay: 100, interval: 1000, restart, scheduler: clock.scheduler });
      expectObservable(sweep, unsub).toBe(expected, events);
      expectSubscriptions(restart.subscriptions).toBe('^ 1149ms !');
      expectSubscriptions(l1.subscriptions).toBe('(^!)');
      expectSubscriptions(l2.subscriptions).toBe('1000ms ^ 149ms !');
      ts.schedule(() => (armedAfter = clock.armed()), 1151);
    });
    expect(armedAfter).toBe(0);
  });

  it('cancels the wait between rounds when unsubscribed', () => {
    const clock = tracking(ts);
    let armedAfter = -1;
    let rounds: number[] = [];
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const restart = cold('-');
      const listing = cold('(a|)');
      const served = listings(listing);
      rounds = served.rounds;
      const unsub = '      ^ 499ms !';
      const expected = '   (aE)';
      const sweep = pacedSweep({ list: served.list, delay: 100, interval: 1000, restart, scheduler: clock.scheduler });
      expectObservable(sweep, unsub).toBe(expected, { a: item(1, 'a', false), E: ok(1) });
      expectSubscriptions(restart.subscriptions).toBe('^ 499ms !');
      expectSubscriptions(listing.subscriptions).toBe('(^!)');
      ts.schedule(() => (armedAfter = clock.armed()), 501);
    });
    expect(armedAfter).toBe(0);
    expect(rounds).toEqual([1]);
  });
});
