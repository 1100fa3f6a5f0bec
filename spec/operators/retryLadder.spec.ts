import { Subject, merge, tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { Attempt, retryLadder } from '@rxfleet/operators';
import { tracking } from '../helpers/marbles';

// f: key k failed, s: key k succeeded; a/b: keys a/b failed, B: key b succeeded.
const reports: Record<string, Attempt<string>> = {
  f: { key: 'k', ok: false },
  s: { key: 'k', ok: true },
  a: { key: 'a', ok: false },
  b: { key: 'b', ok: false },
  B: { key: 'b', ok: true },
};
const keys = { k: 'k', a: 'a', b: 'b' };

describe('retryLadder', () => {
  let ts: TestScheduler;
  beforeEach(() => {
    ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it("behaves as its doc comment's diagram says", () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('f-f-f-f---s--f|', reports);
      const subs = '       ^-------------!';
      const expected = '   -k-k---k------|';
      expectObservable(source.pipe(retryLadder({ fast: 1, fastAttempts: 2, slow: 3, scheduler: ts }))).toBe(expected, keys);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('retries a key that keeps failing after 1 s, 1 s, 1 s, then every 5 s, for ever (defaults)', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const first = cold('f', reports);
      const subs = '      ^ 19999ms !';
      const unsub = '     ^ 19999ms !';
      const expected = '  1s k 999ms k 999ms k 4999ms k 4999ms k 4999ms k';
      // Every retry is answered by another failure, as a re-read that fails again would.
      const answers = new Subject<Attempt<string>>();
      const retries = merge(first, answers).pipe(
        retryLadder<string>({ scheduler: ts }),
        tap((key) => answers.next({ key, ok: false })),
      );
      expectObservable(retries, unsub).toBe(expected, keys);
      expectSubscriptions(first.subscriptions).toBe(subs);
    });
  });

  it('keeps at most one retry pending per key, and does not count the failures it ignores', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      // With fastAttempts = 2, counting the two ignored failures would make the one at 1.5 s slow.
      const source = cold('f 99ms f 99ms f 1299ms f 2s |', reports);
      const subs = '       ^ 3500ms !';
      const expected = '   1s k 1499ms k 1000ms |';
      expectObservable(source.pipe(retryLadder({ fastAttempts: 2, scheduler: ts }))).toBe(expected, keys);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('cancels the pending retry on a success and starts the key again from its fast attempts', () => {
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      // The failure at 1.5 s schedules a slow retry for 6.5 s; the success at 2 s cancels it, and the
      // failure at 3 s is fast again.
      const source = cold('f 1499ms f 499ms s 999ms f 4999ms |', reports);
      const subs = '       ^ 7999ms !';
      const expected = '   1s k 2999ms k 3999ms |';
      expectObservable(source.pipe(retryLadder({ fastAttempts: 1, scheduler: ts }))).toBe(expected, keys);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
  });

  it('keeps each key on its own ladder and reports how many keys have a retry pending', () => {
    const pending: number[] = [];
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('a 499ms b 699ms a 399ms B 99ms b 5299ms |', reports);
      const subs = '       ^ 6999ms !';
      const expected = '   1s a 499ms b 1199ms b 3499ms a 799ms |';
      const ladder = retryLadder<string>({ fastAttempts: 1, scheduler: ts, onPendingChange: (n) => pending.push(n) });
      expectObservable(source.pipe(ladder)).toBe(expected, keys);
      expectSubscriptions(source.subscriptions).toBe(subs);
    });
    expect(pending).toEqual([1, 2, 1, 2, 1, 2, 1, 0]);
  });

  it('completes at once when the source completes, cancelling pending retries', () => {
    const clock = tracking(ts);
    const pending: number[] = [];
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('f 99ms |', reports);
      const subs = '       ^ 99ms !';
      const expected = '   100ms |';
      const ladder = retryLadder<string>({ scheduler: clock.scheduler, onPendingChange: (n) => pending.push(n) });
      expectObservable(source.pipe(ladder)).toBe(expected, keys);
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAfter = clock.armed()), 101);
    });
    expect(armedAfter).toBe(0);
    expect(pending).toEqual([1, 0]);
  });

  it('errors at once when the source errors, cancelling pending retries', () => {
    const clock = tracking(ts);
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('f 99ms #', reports);
      const subs = '       ^ 99ms !';
      const expected = '   100ms #';
      expectObservable(source.pipe(retryLadder<string>({ scheduler: clock.scheduler }))).toBe(expected, keys);
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAfter = clock.armed()), 101);
    });
    expect(armedAfter).toBe(0);
  });

  it('cancels pending retries when unsubscribed', () => {
    const clock = tracking(ts);
    const pending: number[] = [];
    let armedAfter = -1;
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('f 1999ms |', reports);
      const unsub = '      ^ 99ms !';
      const subs = '       ^ 99ms !';
      const expected = '   ';
      const ladder = retryLadder<string>({ scheduler: clock.scheduler, onPendingChange: (n) => pending.push(n) });
      expectObservable(source.pipe(ladder), unsub).toBe(expected, keys);
      expectSubscriptions(source.subscriptions).toBe(subs);
      ts.schedule(() => (armedAfter = clock.armed()), 101);
    });
    expect(armedAfter).toBe(0);
    expect(pending).toEqual([1, 0]);
  });
});
