import { Observable, ObservableInput, OperatorFunction } from 'rxjs';
import { subscribeWith } from './internal/OperatorSubscriber';
import { KeyedReads } from './KeyedReads';
import { SlotPool } from './SlotPool';

/** Options for {@link readPerKey}. */
export interface ReadPerKeyConfig<T, K, R> {
  /** What a request reads: requests with the same key share one read. */
  key: (request: T) => K;
  /** The read for a request, as an Observable factory: its first value is the answer. */
  read: (request: T) => ObservableInput<R>;
  /**
   * Whether `next` needs more than the read already running for `running` can give (for example
   * it must wait for the instance to be running): then the running read is aborted and a read
   * for `next` takes its place. Default: never, so every request joins.
   */
  supersedes?: (next: T, running: T) => boolean;
  /** Each key emitted cancels that key's read: its requests come out `cancelled`. */
  cancel?: ObservableInput<K>;
  /** Most reads in flight at once; further reads wait their turn in arrival order. Default unbounded. */
  concurrency?: number;
}

/** What every {@link ReadResult} carries. */
export interface ReadLanded<T, K> {
  readonly key: K;
  /** Every request the answer is for, in arrival order (those a superseded read carried come first). */
  readonly requests: readonly T[];
}

/** The read answered. */
export interface ReadAnswered<T, K, R> extends ReadLanded<T, K> {
  readonly status: 'answered';
  readonly value: R;
}

/** The read errored, its factory threw, or it completed without an answer (`NoAnswerError`). */
export interface ReadFailed<T, K> extends ReadLanded<T, K> {
  readonly status: 'failed';
  readonly error: unknown;
}

/** The read was cancelled through `cancel` before it answered. */
export interface ReadCancelled<T, K> extends ReadLanded<T, K> {
  readonly status: 'cancelled';
}

/** How one read ended, for all the requests that waited on it. */
export type ReadResult<T, K, R> = ReadAnswered<T, K, R> | ReadFailed<T, K> | ReadCancelled<T, K>;

/**
 * Keeps one read in flight per key: a request for a key already being read joins that read, and
 * one that needs more supersedes it; every request waiting on a read gets its one answer.
 *
 * It is the {@link KeyedReads} core as an operator, one core per subscription (its `concurrency`
 * a {@link SlotPool} of that size), so the rule lives in one place.
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
 * - With `concurrency`, reads beyond the limit wait in the slot pool's ring in arrival order; a
 *   waiting read can still be joined, superseded or cancelled, and costs nothing but its place.
 * - First come, first served: a new read always joins the back of the queue, then the queue is
 *   pulled, so a request fed from inside an emission of this operator never starts ahead of
 *   reads already waiting.
 * - A read's error, a `read` factory that throws, and a read that completes without an answer
 *   (`NoAnswerError`) are a `failed` result for its requests, never an error of the output.
 * - A `key` or `supersedes` that throws errors the output (as rxjs's operators do when a callback
 *   throws); the request it was deciding on is lost with the rest, and the books were not touched.
 * - Completes once the source has completed and every read has landed. Errors when the source or
 *   `cancel` errors.
 * - Unsubscribing (or an error) unsubscribes the source and `cancel`, and aborts every running
 *   read; waiting reads are dropped unstarted.
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
 * @param config `key`, `read`, `supersedes`, `cancel`, `concurrency`.
 * @return A function that returns an Observable of one {@link ReadResult} per read that landed.
 */
export function readPerKey<T, K, R>(config: ReadPerKeyConfig<T, K, R>): OperatorFunction<T, ReadResult<T, K, R>> {
  const { concurrency = Infinity, read } = config;
  if (!(concurrency >= 1)) throw new RangeError(`concurrency must be >= 1, got ${concurrency}`);
  return (source) =>
    new Observable<ReadResult<T, K, R>>((subscriber) => {
      let sourceDone = false;
      // The core's books, one per subscription; its slots are this subscription's concurrency.
      const reads: KeyedReads<T, K, R> = new KeyedReads<T, K, R>({
        key: config.key,
        read: (request) => read(request),
        supersedes: config.supersedes,
        slots: concurrency === Infinity ? undefined : new SlotPool(concurrency),
        onLanded: (result) => {
          subscriber.next(result);
          if (sourceDone && reads.size === 0) subscriber.complete();
        },
        onError: (error) => subscriber.error(error),
      });
      if (config.cancel !== undefined) {
        subscribeWith(subscriber, subscriber, config.cancel, {
          next: (key) => reads.cancel(key),
          // `cancel` completing only means nothing more will be cancelled.
          complete: () => undefined,
        });
        if (subscriber.closed) return;
      }
      subscribeWith(subscriber, subscriber, source, {
        next: (request) => reads.request(request),
        complete: () => {
          sourceDone = true;
          if (reads.size === 0) subscriber.complete();
        },
      });
      return () => reads.dispose();
    });
}
