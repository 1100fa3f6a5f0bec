import { InteropObservable, Observable, ObservableInput, ReadableStreamLike, SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { LONGEST_DELAY, checkDelay, checkFunction, checkOptionalFunction } from './internal/checks.js';
import { subscribeWith } from './internal/OperatorSubscriber.js';
import { RingQueue } from './RingQueue.js';

/**
 * What {@link pacedSweep} emits: each item a round hands on, and the end of each round that was not
 * abandoned, successful or not.
 *
 * @group What the operators take and give
 */
export type SweepEvent<N> =
  | {
      /** An item handed on. */
      kind: 'item';
      /** The round's number, from 1. */
      round: number;
      /** The item. */
      item: N;
      /** Whether the round is paced (items `delay` apart) rather than fast. */
      paced: boolean;
    }
  | {
      /** The end of a round that was not abandoned. */
      kind: 'end';
      /** The round's number, from 1. */
      round: number;
      /** The listing completed and its last item was handed on. */
      ok: true;
    }
  | {
      /** The end of a round that was not abandoned. */
      kind: 'end';
      /** The round's number, from 1. */
      round: number;
      /** The listing failed (or `list` threw): a fast round follows after `failureDelay`. */
      ok: false;
      /** What the listing failed with. */
      error: unknown;
    };

/**
 * What a round goes over, as `list` returns it: the items one by one (an Observable, an array, any
 * `ObservableInput` but a promise), or all of them at once as a promise of an array (or of any
 * iterable). `Promise<string[]>` is a listing of strings, handed on (and paced) one string at a
 * time; an Observable of arrays is a listing of arrays.
 *
 * @group What the operators take and give
 */
export type Listing<N> =
  Observable<N> | InteropObservable<N> | AsyncIterable<N> | ArrayLike<N> | Iterable<N> | ReadableStreamLike<N> | PromiseLike<Iterable<N>>;

/**
 * Options for {@link pacedSweep}.
 *
 * @group Options
 */
export interface PacedSweepConfig<N> {
  /**
   * Lists what round `round` goes over (see {@link Listing}: a promise resolves to the whole
   * listing); subscribed once per round, unsubscribed when the round ends or is abandoned.
   */
  list: (round: number) => Listing<N>;
  /** Ms between two items handed on in a paced round, from 0 to 2147483647 (the longest a timer waits). */
  delay: number;
  /** Ms between the end of a successful round and the start of the next (paced) one, from 0 to 2147483647. */
  interval: number;
  /** Each emission abandons the round in progress (or the wait between rounds) and starts a fast round at once. */
  restart?: ObservableInput<unknown>;
  /**
   * Ms to wait after a failed round, given how many rounds in a row have failed (1 for the first):
   * from 0 to 2147483647, or the output errors with a `RangeError` naming the value. Default: 5 s,
   * doubling, at most 5 min.
   */
  failureDelay?: (consecutiveFailures: number) => number;
  /** Where the waits are timed. Default `asyncScheduler`; pass a `TestScheduler` in specs. */
  scheduler?: SchedulerLike;
}

const isPromiseLike = <N>(listing: Listing<N>): listing is PromiseLike<Iterable<N>> =>
  listing != null && typeof (listing as { then?: unknown }).then === 'function';

/** 5 s, 10 s, 20 s, ... never more than 5 min. */
function defaultFailureDelay(consecutiveFailures: number): number {
  return Math.min(5000 * 2 ** Math.max(0, consecutiveFailures - 1), 300_000);
}

/**
 * Goes over a listing again and again, for ever: each round hands on what `list(round)` yields one
 * item at a time, `delay` ms apart when the round is paced, and rounds are `interval` ms apart.
 *
 * Why two speeds: a full pass is how a model that follows events catches what no event announced,
 * and it must not crowd out the live traffic, so a routine round is paced and the rounds are spaced
 * out. But when what is held is known to be stale (nothing read yet, a reconnect, a round that
 * failed) there is nothing to protect and everything to catch up on, so that round runs at full
 * speed. A failed round is retried soon, backing off, rather than after a whole `interval`; nothing
 * else pulls a round in early, because the round is the thing that must not be hurried.
 *
 * ```
 * list = -(ab|), delay = 2 ms, interval = 4 ms; E = the end of a round
 * rounds:  1----2------3-----
 * output:  -(abE)a-(bE)-a-(bE)
 * ```
 * (round 1 is fast: both items at once; rounds 2 and 3 are paced: b waits 2 ms behind a, and the
 * round ends with its last item, not a `delay` later; each round starts `interval` after the last
 * one ended)
 *
 * Semantics:
 * - Rounds are numbered from 1, and `list` is called with the number. Round 1 is fast.
 * - A round hands on items in the order `list` yields them. In a paced round the first item goes at
 *   once and each later one at least `delay` ms after the one before; items that arrive sooner are
 *   buffered. In a fast round items go as they come.
 * - A round ends `ok: true` as soon as the listing has completed and its last item was handed on:
 *   there is no trailing `delay`. Then, after `interval` ms, a paced round starts.
 * - A listing that errors (or a `list` that throws) ends the round at once with `ok: false` and the
 *   error; items it had buffered are dropped. After `failureDelay(n)` ms, n being the number of
 *   rounds failed in a row, a fast round starts. A successful round resets n.
 * - A `restart` emission abandons the round in progress (its listing is unsubscribed, its buffered
 *   items dropped, and no `end` is emitted for it) or the wait between rounds, resets the failure
 *   count, and starts a fast round at once. A restart that emits synchronously on subscription
 *   starts round 1 rather than abandoning it. `restart` completing is ignored; `restart` erroring
 *   errors the output.
 * - Never completes. Errors only if `restart` errors or `failureDelay` throws or returns a wait
 *   that is not from 0 to 2147483647 ms (a callback that throws errors the output, as in rxjs;
 *   `list` throwing is a failed round instead, like its listing erroring).
 * - Unsubscribing unsubscribes the listing in progress, `restart` and every pending timer.
 * - Bad options are refused when the sweep is made: a `delay` or `interval` that is negative, not
 *   a number or longer than a timer can wait is a `RangeError` (an `interval` of NaN would start
 *   round after round at once, the opposite of a sweep); `list` or `failureDelay` not a function a
 *   `TypeError`.
 *
 * @example Go over a fleet every 6 h, one name every 5 s, at once after a reconnect
 * ```ts
 * pacedSweep({
 *   list: () => listInstanceNames(),
 *   delay: 5_000,
 *   interval: 6 * 3600_000,
 *   restart: reconnected$,
 * }).subscribe((event) => (event.kind === 'item' ? read(event.item) : roundEnded(event)));
 * ```
 *
 * @param config `list`, `delay`, `interval` (required), `restart`, `failureDelay`, `scheduler`.
 * @return An Observable of the items and the rounds' ends; it never completes.
 * @throws RangeError or TypeError (when called) for a bad option, as above.
 *
 * @group Observable factories
 */
export function pacedSweep<N>(config: PacedSweepConfig<N>): Observable<SweepEvent<N>> {
  const { list, delay, interval, restart, failureDelay = defaultFailureDelay, scheduler = asyncScheduler } = config;
  checkFunction('pacedSweep', 'list', list);
  checkDelay('pacedSweep', 'delay', delay);
  checkDelay('pacedSweep', 'interval', interval);
  checkOptionalFunction('pacedSweep', 'failureDelay', config.failureDelay);
  return new Observable<SweepEvent<N>>((subscriber) => {
    let round = 0;
    let failures = 0;
    // Whatever runs now, a round or a wait; replacing it cancels everything it owned.
    let phase: Subscription | undefined;

    const enter = (): Subscription => {
      phase?.unsubscribe();
      phase = new Subscription();
      if (subscriber.closed) phase.unsubscribe();
      return phase;
    };

    const wait = (ms: number, paced: boolean): void => {
      enter().add(scheduler.schedule(() => startRound(paced), ms));
    };

    const startRound = (paced: boolean): void => {
      const current = enter();
      const r = ++round;
      const queue = new RingQueue<N>();
      let listed = false;
      let resting = false;

      // The next phase is armed before the end is emitted, so a restart raised by whoever reads the
      // end abandons that wait instead of being overwritten by it.
      const succeed = (): void => {
        failures = 0;
        wait(interval, true);
        subscriber.next({ kind: 'end', round: r, ok: true });
      };
      const fail = (error: unknown): void => {
        if (current.closed) return;
        failures++;
        let ms: number;
        try {
          ms = failureDelay(failures);
        } catch (thrown) {
          subscriber.error(thrown);
          return;
        }
        // A wait that is not one (NaN, negative, past what a timer holds) would retry at once, for ever.
        if (typeof ms !== 'number' || !(ms >= 0 && ms <= LONGEST_DELAY)) {
          subscriber.error(
            new RangeError(
              `pacedSweep: failureDelay(${failures}) must return a number of milliseconds from 0 to ${LONGEST_DELAY}, got ${String(ms)}`,
            ),
          );
          return;
        }
        wait(ms, false);
        subscriber.next({ kind: 'end', round: r, ok: false, error });
      };

      const rest = (): void => {
        resting = true;
        const timer = scheduler.schedule(() => {
          timer.unsubscribe();
          resting = false;
          handOn();
        }, delay);
        current.add(timer);
      };

      // `current.closed` is checked before every item: whoever reads one may restart the sweep.
      const handOn = (): void => {
        while (!current.closed) {
          if (queue.length === 0) {
            if (listed) succeed();
            return;
          }
          if (resting) return;
          const item = queue.shift() as N;
          if (paced) rest();
          subscriber.next({ kind: 'item', round: r, item, paced });
        }
      };

      let listing: Listing<N>;
      try {
        listing = list(r);
      } catch (error) {
        fail(error);
        return;
      }
      const complete = (): void => {
        listed = true;
        handOn();
      };
      // Owned by the round: abandoning it unsubscribes the listing, even mid-way through a
      // synchronous one. An input that is not an ObservableInput fails the round like an error.
      if (isPromiseLike(listing)) {
        // The whole listing at once: its items go into the queue together, to be handed on (and
        // paced) one by one. What it resolves to not being iterable fails the round.
        subscribeWith(
          subscriber,
          listing,
          {
            next: (all) => {
              let items: N[];
              try {
                items = [...all];
              } catch (error) {
                fail(error);
                return;
              }
              for (const item of items) queue.push(item);
              handOn();
            },
            error: fail,
            complete,
          },
          current,
        );
      } else {
        subscribeWith(
          subscriber,
          listing as ObservableInput<N>,
          {
            next: (item) => {
              queue.push(item);
              handOn();
            },
            error: fail,
            complete,
          },
          current,
        );
      }
    };

    subscriber.add(() => phase?.unsubscribe());
    if (restart !== undefined) {
      subscribeWith(subscriber, restart, {
        next: () => {
          failures = 0;
          startRound(false);
        },
        // A restart notifier that completes only means no more restarts.
        complete: () => undefined,
      });
    }
    if (round === 0 && !subscriber.closed) startRound(false);
  });
}
