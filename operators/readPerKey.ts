import { Observable, ObservableInput, OperatorFunction, Subscription, from } from 'rxjs';
import { RingQueue } from './RingQueue';

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

/** The read errored, or completed without an answer. */
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

interface Flight<T, K> {
  readonly key: K;
  readonly lead: T;
  readonly requests: T[];
  /** Set while the read runs; `undefined` while the flight waits for a free slot. */
  subscription?: Subscription;
  /** A flight that was superseded or cancelled while waiting stays in the ring; this skips it. */
  dead: boolean;
}

/**
 * Keeps one read in flight per key: a request for a key already being read joins that read, and
 * one that needs more supersedes it; every request waiting on a read gets its one answer.
 *
 * Coalescing saves the read, not the request: both requests come out, carrying what one read
 * found. Superseding exists because some requests need an answer the running read cannot give
 * (an instance that has just started must be read once it is running and has an address);
 * letting the weaker read land first would hand the stronger request a stale answer.
 *
 * ```
 * key = first letter; supersedes = (next is 'a!')
 * source:   a1-a2-a!--------
 * read(a1): --------x          (aborted at a!, its answer never lands)
 * read(a!):        ---y|
 * result:   -----------R      R = { key: a, requests: [a1, a2, a!], answered: y }
 * ```
 *
 * Semantics:
 * - A result is emitted when a read answers, errors, completes silently, or is cancelled; it
 *   lists every request that waited on it, in arrival order. The read's first value is the
 *   answer; the read is unsubscribed then.
 * - A superseded read is unsubscribed at once (which aborts it), and its requests move, first,
 *   to the new read. A result of a superseded or cancelled read is never emitted, even if it
 *   arrives synchronously during the abort.
 * - With `concurrency`, flights beyond the limit wait in a ring in arrival order; a waiting flight
 *   can still be joined, superseded or cancelled.
 * - Completes once the source has completed and every read has landed. Errors when the source or
 *   `cancel` errors (a read's error is a `failed` result, not an error).
 * - Unsubscribing aborts every running read.
 *
 * @param config `key`, `read`, `supersedes`, `cancel`, `concurrency`.
 */
export function readPerKey<T, K, R>(config: ReadPerKeyConfig<T, K, R>): OperatorFunction<T, ReadResult<T, K, R>> {
  const { key: keyOf, read, supersedes = () => false, cancel, concurrency = Infinity } = config;
  if (!(concurrency >= 1)) throw new RangeError(`concurrency must be >= 1, got ${concurrency}`);
  return (source) =>
    new Observable<ReadResult<T, K, R>>((subscriber) => {
      const flights = new Map<K, Flight<T, K>>();
      const waiting = new RingQueue<Flight<T, K>>();
      let inFlight = 0;
      let sourceDone = false;
      let pulling = false;

      const finishIfIdle = (): void => {
        if (sourceDone && flights.size === 0) subscriber.complete();
      };

      // Removes a flight from the books; true if it was still the current one for its key.
      const retire = (flight: Flight<T, K>): boolean => {
        if (flight.dead) return false;
        flight.dead = true;
        if (flights.get(flight.key) === flight) flights.delete(flight.key);
        if (flight.subscription !== undefined) {
          inFlight--;
          flight.subscription.unsubscribe();
        }
        return true;
      };

      const land = (flight: Flight<T, K>, result: ReadResult<T, K, R>): void => {
        if (!retire(flight)) return;
        subscriber.next(result);
        pullNext();
        finishIfIdle();
      };

      const start = (flight: Flight<T, K>): void => {
        const subscription = new Subscription();
        flight.subscription = subscription;
        inFlight++;
        let answered = false;
        const { key, requests } = flight;
        let input: ObservableInput<R>;
        try {
          input = read(flight.lead);
        } catch (error) {
          land(flight, { status: 'failed', key, requests, error });
          return;
        }
        subscription.add(
          from(input).subscribe({
            next: (value) => {
              answered = true;
              land(flight, { status: 'answered', key, requests, value });
            },
            error: (error: unknown) => land(flight, { status: 'failed', key, requests, error }),
            complete: () => {
              if (!answered) land(flight, { status: 'failed', key, requests, error: new Error('read completed without an answer') });
            },
          }),
        );
      };

      const pullNext = (): void => {
        if (pulling) return;
        pulling = true;
        try {
          while (inFlight < concurrency && waiting.length > 0) {
            const flight = waiting.shift() as Flight<T, K>;
            if (!flight.dead) start(flight);
          }
        } finally {
          pulling = false;
        }
      };

      const launch = (flight: Flight<T, K>): void => {
        flights.set(flight.key, flight);
        waiting.push(flight);
        pullNext();
      };

      const accept = (request: T): void => {
        const key = keyOf(request);
        const current = flights.get(key);
        if (current === undefined) {
          launch({ key, lead: request, requests: [request], dead: false });
          return;
        }
        if (!supersedes(request, current.lead)) {
          current.requests.push(request);
          return;
        }
        retire(current);
        launch({ key, lead: request, requests: [...current.requests, request], dead: false });
      };

      if (cancel !== undefined) {
        subscriber.add(
          from(cancel).subscribe({
            next: (key) => {
              const flight = flights.get(key);
              if (flight !== undefined) land(flight, { status: 'cancelled', key, requests: flight.requests });
            },
            error: (error: unknown) => subscriber.error(error),
          }),
        );
        if (subscriber.closed) return;
      }

      subscriber.add(
        source.subscribe({
          next: accept,
          error: (error: unknown) => subscriber.error(error),
          complete: () => {
            sourceDone = true;
            finishIfIdle();
          },
        }),
      );

      return () => {
        for (const flight of flights.values()) flight.subscription?.unsubscribe();
        flights.clear();
        waiting.clear();
      };
    });
}
