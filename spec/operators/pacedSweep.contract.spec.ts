import { Observable, Subject, map, take } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { SweepEvent, pacedSweep } from '@rxfleet/operators';
import { trackingScheduler } from '@rxfleet/operators/testing';
import { failOnUnhandledErrors } from './unhandledErrors';

const short = (e: SweepEvent<string>): string => (e.kind === 'item' ? e.item : e.ok ? 'E' : 'F');

describe('pacedSweep: the rxjs contract', () => {
  failOnUnhandledErrors();
  let ts: TestScheduler;
  beforeEach(() => {
    ts = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('a `list` that returns no ObservableInput fails its round, as one that throws does', () => {
    ts.run(({ expectObservable }) => {
      const sweep = pacedSweep({
        list: () => undefined as unknown as Observable<string>,
        delay: 1,
        interval: 10,
        failureDelay: () => 5,
        scheduler: ts,
      });
      expectObservable(sweep.pipe(map(short)), '^------!').toBe('F----F-');
    });
  });

  it('a synchronous listing (an array) is handed on at once in a fast round, paced in the next', () => {
    ts.run(({ expectObservable }) => {
      const sweep = pacedSweep({ list: () => ['a', 'b'], delay: 2, interval: 6, scheduler: ts });
      expectObservable(sweep.pipe(map(short)), '^---------!').toBe('(abE)-a-(bE)');
    });
  });

  it('unsubscribing downstream (take) unsubscribes the listing, `restart` and every timer', () => {
    const timers = trackingScheduler(ts);
    ts.run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const listing = cold('-a-b-c|');
      const restart = hot('--------');
      const sweep = pacedSweep({ list: () => listing, delay: 1, interval: 10, restart, scheduler: timers.scheduler });
      expectObservable(sweep.pipe(map(short), take(2))).toBe('-a-(b|)');
      expectSubscriptions(listing.subscriptions).toBe('^--!');
      expectSubscriptions(restart.subscriptions).toBe('^--!');
    });
    expect(timers.armed()).toBe(0);
  });

  it('a restart raised by whoever reads an item stops a synchronous listing where it is', () => {
    const pulled = new Map<number, number>();
    function* names(round: number): Generator<string> {
      for (let i = 0; i < 1000; i++) {
        pulled.set(round, (pulled.get(round) ?? 0) + 1);
        yield `n${i}`;
      }
    }
    const restart = new Subject<void>();
    const seen: string[] = [];
    const subscription = pacedSweep({ list: (round) => names(round), delay: 0, interval: 1e9, restart }).subscribe((e) => {
      if (e.kind !== 'item') return;
      seen.push(`${e.round}:${e.item}`);
      if (e.round === 1 && e.item === 'n1') restart.next();
    });
    subscription.unsubscribe();
    expect(seen.slice(0, 3)).toEqual(['1:n0', '1:n1', '2:n0']);
    // The listing of round 1 was let go at once: not read to its end behind the restart's back.
    expect(pulled.get(1)).toBe(2);
    expect(pulled.get(2)).toBe(1000);
  });
});
