import { Observable, ObservableInput, OperatorFunction } from 'rxjs';
import { checkCount, checkFunction, checkOptionalFunction } from './internal/checks.js';
import { subscribeWith } from './internal/OperatorSubscriber.js';
import { ReadResult, PerKeyReader } from './PerKeyReader.js';
import { SlotPool } from './SlotPool.js';

/**
 * Options for {@link readPerKey}.
 *
 * @group Options
 */
export interface ReadPerKeyConfig<T, K, R> {
  /** What a request reads: requests with the same key share one read. */
  key: (request: T) => K;
  /**
   * The read for a request, as an Observable factory called when the read starts: its first value
   * is the answer. A read that holds a slot (`concurrency` or `slots`) holds it until it lands, or
   * until it calls `giveBack()`: a read that waits between its calls (polling for an address) gives
   * its slot back and takes one per call itself (`slots.run`), so its waits hold none.
   */
  read: (request: T, giveBack: () => void) => ObservableInput<R>;
  /**
   * Whether `next` needs more than the read already running for `running` can give (for example
   * it must wait for the instance to be running): then the running read is aborted and a read
   * for `next` takes its place. Default: never, so every request joins.
   */
  supersedes?: (next: T, running: T) => boolean;
  /** Each key emitted cancels that key's read: its requests come out `cancelled`. */
  cancel?: ObservableInput<K>;
  /**
   * Whether `request` must be answered by a read that started after it arrived (a change announced
   * while a read is on its way may not be in that read's answer). Such a request arriving once its
   * key's read has started does not join it: it waits, and the requests that came that way are read
   * together, in arrival order, once that read has answered (led by the one that superseded the
   * others). A request arriving while its key's read still waits for a slot joins it. Default: never.
   */
  fresh?: (request: T) => boolean;
  /**
   * Most reads in flight at once, a whole number from 1 (`Infinity`: no bound); further reads wait
   * their turn in arrival order. Default unbounded.
   */
  concurrency?: number;
  /**
   * The slots reads take, shared with whatever else runs in them (other calls to the same server),
   * instead of a pool of `concurrency` of this subscription's own. Reads still wait first come,
   * first served.
   */
  slots?: SlotPool;
}

/**
 * Keeps one read in flight per key: a request for a key already being read joins that read, and
 * one that needs more supersedes it; every request waiting on a read gets its one answer.
 *
 * It is the {@link PerKeyReader} core as an operator, one core per subscription (its `concurrency`
 * a {@link SlotPool} of that size, or the `slots` it is given), so the rule lives in one place.
 *
 * Coalescing saves the read, not the request: both requests come out, carrying what one read
 * found. Superseding exists because some requests need an answer the running read cannot give
 * (an instance that has just started must be read once it is running and has an address);
 * letting the weaker read land first would hand the stronger request a stale answer.
 *
 * ```
 * key = the letter; supersedes(next, running) = next ends in ! and running does not
 * x = a1, y = a2, s = a!
 * source:  x-y-s-------|
 * read(x): --------A|           (aborted at s: its answer never lands)
 * read(s):     ---B|
 * result:  -------R----|        R = { key: a, requests: [a1, a2, a!], status: answered, value: B }
 * ```
 *
 * Semantics:
 * - A result is emitted when a read answers, errors, completes silently, or is cancelled; it
 *   lists every request that waited on it, in arrival order. The read's first value is the
 *   answer; the read is unsubscribed then.
 * - A superseded read is unsubscribed at once (which aborts it), and its requests move, first,
 *   to the new read. A result of a superseded or cancelled read is never emitted, even if it
 *   arrives synchronously during the abort.
 * - With `concurrency` (or `slots`), reads beyond the limit wait in the slot pool's ring in arrival
 *   order; a waiting read can still be joined, superseded or cancelled, and costs nothing but its
 *   place. A read's slot goes back once its result has been emitted, or when the read calls
 *   `giveBack`.
 * - With `fresh`, a request that must not take an answer its key's running read could have had
 *   before it arrived is read again right after that read answers (a failure or a cancel is
 *   shared with it: they are as true for it).
 * - First come, first served: a new read always joins the back of the queue, then the queue is
 *   pulled, so a request fed from inside an emission of this operator never starts ahead of
 *   reads already waiting.
 * - A read's error, a `read` factory that throws, and a read that completes without an answer
 *   (`NoAnswerError`) are a `failed` result for its requests, never an error of the output.
 * - A `key`, `supersedes` or `fresh` that throws errors the output (as rxjs's operators do when a callback
 *   throws); the request it was deciding on is lost with the rest, and the books were not touched.
 * - Completes once the source has completed and every read has landed. Errors when the source or
 *   `cancel` errors.
 * - Unsubscribing (or an error) unsubscribes the source and `cancel`, and aborts every running
 *   read; waiting reads are dropped unstarted.
 * - Bad options are refused when the operator is made: a `concurrency` that is not a whole number
 *   of at least 1 (nor `Infinity`) is a `RangeError`; `key`, `read`, `supersedes` or `fresh` not a
 *   function, or both `concurrency` and `slots`, a `TypeError`.
 *
 * @example Read each instance once however many events name it; a start supersedes a plain read
 * ```ts
 * events$.pipe(
 *   readPerKey({
 *     key: (e) => `${e.project}/${e.name}`,
 *     read: (e) => fromAbortable((signal) => incus.getInstance(e.project, e.name, { signal })),
 *     supersedes: (next, running) => next.action === 'instance-started' && running.action !== 'instance-started',
 *     concurrency: 16,
 *   }),
 * );
 * ```
 *
 * @param config `key`, `read`, `supersedes`, `fresh`, `cancel`, `concurrency` or `slots`.
 * @throws RangeError (when called) if `concurrency` is not a whole number of at least 1 (nor
 * `Infinity`); TypeError if a callback is not a function, or both `concurrency` and `slots` are
 * given.
 * @return A function that returns an Observable of one {@link ReadResult} per read that landed.
 *
 * @group Operators
 */
export function readPerKey<T, K, R>(config: ReadPerKeyConfig<T, K, R>): OperatorFunction<T, ReadResult<T, K, R>> {
  const { concurrency = Infinity, slots } = config;
  checkFunction('readPerKey', 'key', config.key);
  checkFunction('readPerKey', 'read', config.read);
  checkOptionalFunction('readPerKey', 'supersedes', config.supersedes);
  checkOptionalFunction('readPerKey', 'fresh', config.fresh);
  checkCount('readPerKey', 'concurrency', concurrency, 1);
  if (slots !== undefined && config.concurrency !== undefined) throw new TypeError('readPerKey takes `concurrency` or `slots`, not both');
  return (source) =>
    new Observable<ReadResult<T, K, R>>((subscriber) => {
      let sourceDone = false;
      // The core's books, one per subscription; its slots are this subscription's concurrency.
      const reads: PerKeyReader<T, K, R> = new PerKeyReader<T, K, R>({
        key: config.key,
        read: config.read,
        supersedes: config.supersedes,
        fresh: config.fresh,
        slots: slots ?? (concurrency === Infinity ? undefined : new SlotPool(concurrency)),
        onLanded: (result) => {
          subscriber.next(result);
          if (sourceDone && reads.size === 0) subscriber.complete();
        },
        onError: (error) => subscriber.error(error),
      });
      if (config.cancel !== undefined) {
        subscribeWith(subscriber, config.cancel, {
          next: (key) => reads.cancel(key),
          // `cancel` completing only means nothing more will be cancelled.
          complete: () => undefined,
        });
        if (subscriber.closed) return;
      }
      subscribeWith(subscriber, source, {
        next: (request) => reads.request(request),
        complete: () => {
          sourceDone = true;
          if (reads.size === 0) subscriber.complete();
        },
      });
      return () => reads.dispose();
    });
}
