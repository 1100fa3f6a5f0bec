import { Observable, ObservableInput, OperatorFunction, Subscriber } from 'rxjs';
import { NoAnswerError } from './errors';
import { OperatorSubscriber, subscribeInner, subscribeWith } from './internal/OperatorSubscriber';
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

/** The read errored, its factory threw, or it completed without an answer ({@link NoAnswerError}). */
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
 * - With `concurrency`, flights beyond the limit wait in a ring in arrival order; a waiting flight
 *   can still be joined, superseded or cancelled.
 * - First come, first served: a new read always joins the back of the queue, then the queue is
 *   pulled, so a request fed from inside an emission of this operator never starts ahead of
 *   reads already waiting.
 * - A read's error, a `read` factory that throws, and a read that completes without an answer
 *   ({@link NoAnswerError}) are a `failed` result for its requests, never an error of the output.
 * - A `key` or `supersedes` that throws errors the output (as rxjs's operators do when a callback
 *   throws); the request it was deciding on is lost with the rest.
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
  const { concurrency = Infinity } = config;
  if (!(concurrency >= 1)) throw new RangeError(`concurrency must be >= 1, got ${concurrency}`);
  return (source) =>
    new Observable<ReadResult<T, K, R>>((subscriber) => {
      const reads = new Reads<T, K, R>(subscriber, config);
      if (config.cancel !== undefined) {
        subscribeWith(subscriber, subscriber, config.cancel, {
          next: (key) => reads.cancel(key),
          // `cancel` completing only means nothing more will be cancelled.
          complete: () => undefined,
        });
        if (subscriber.closed) return;
      }
      subscribeWith(subscriber, subscriber, source, {
        next: (request) => reads.accept(request),
        complete: () => reads.sourceCompleted(),
      });
      return () => reads.teardown();
    });
}

/** One subscription's books: the current flight per key, and the flights waiting for a slot. */
class Reads<T, K, R> {
  private readonly flights = new Map<K, Flight<T, K, R>>();
  private readonly waiting = new RingQueue<Flight<T, K, R>>();
  private inFlight = 0;
  private sourceDone = false;
  private pulling = false;
  private closed = false;
  private readonly keyOf: (request: T) => K;
  private readonly supersedes: (next: T, running: T) => boolean;
  private readonly concurrency: number;
  readonly read: (request: T) => ObservableInput<R>;

  constructor(
    readonly output: Subscriber<ReadResult<T, K, R>>,
    config: ReadPerKeyConfig<T, K, R>,
  ) {
    this.keyOf = config.key;
    this.read = config.read;
    this.supersedes = config.supersedes ?? (() => false);
    this.concurrency = config.concurrency ?? Infinity;
  }

  accept(request: T): void {
    const key = this.keyOf(request);
    const current = this.flights.get(key);
    if (current === undefined) {
      this.launch(new Flight(this, key, request, [request]));
      return;
    }
    if (!this.supersedes(request, current.lead)) {
      current.requests.push(request);
      return;
    }
    this.retire(current);
    this.launch(new Flight(this, key, request, [...current.requests, request]));
  }

  cancel(key: K): void {
    const flight = this.flights.get(key);
    if (flight !== undefined) this.land(flight, { status: 'cancelled', key, requests: flight.requests });
  }

  sourceCompleted(): void {
    this.sourceDone = true;
    this.finishIfIdle();
  }

  land(flight: Flight<T, K, R>, result: ReadResult<T, K, R>): void {
    if (!this.retire(flight)) return;
    this.output.next(result);
    this.pullNext();
    this.finishIfIdle();
  }

  teardown(): void {
    this.closed = true;
    for (const flight of this.flights.values()) {
      flight.dead = true;
      flight.unsubscribe();
    }
    this.flights.clear();
    this.waiting.clear();
  }

  // Removes a flight from the books; true if it was still the current one for its key.
  private retire(flight: Flight<T, K, R>): boolean {
    if (flight.dead) return false;
    flight.dead = true;
    if (this.flights.get(flight.key) === flight) this.flights.delete(flight.key);
    if (flight.started) this.inFlight--;
    // Aborts the read; whatever it says from here on, even synchronously while aborting, is ignored.
    flight.unsubscribe();
    return true;
  }

  // Always to the back of the queue, then pull: a newcomer never overtakes a read already waiting.
  private launch(flight: Flight<T, K, R>): void {
    this.flights.set(flight.key, flight);
    this.waiting.push(flight);
    this.pullNext();
  }

  private pullNext(): void {
    if (this.pulling) return;
    this.pulling = true;
    try {
      while (!this.closed && this.inFlight < this.concurrency && this.waiting.length > 0) {
        const flight = this.waiting.shift() as Flight<T, K, R>;
        if (!flight.dead) this.start(flight);
      }
    } finally {
      this.pulling = false;
    }
  }

  private start(flight: Flight<T, K, R>): void {
    flight.started = true;
    this.inFlight++;
    let input: ObservableInput<R>;
    try {
      input = this.read(flight.lead);
    } catch (error) {
      this.land(flight, { status: 'failed', key: flight.key, requests: flight.requests, error });
      return;
    }
    subscribeInner(input, flight);
  }

  private finishIfIdle(): void {
    if (this.sourceDone && this.flights.size === 0) this.output.complete();
  }
}

/** One read for one key: the subscriber to it, and every request waiting on its answer. */
class Flight<T, K, R> extends OperatorSubscriber<R> {
  /** Set once the read is subscribed; a flight waiting for a slot is not. */
  started = false;
  /** A flight superseded or cancelled while waiting stays in the queue; this skips it. */
  dead = false;

  constructor(
    private readonly reads: Reads<T, K, R>,
    readonly key: K,
    readonly lead: T,
    readonly requests: T[],
  ) {
    super(reads.output);
  }

  protected onNext(value: R): void {
    this.reads.land(this, { status: 'answered', key: this.key, requests: this.requests, value });
  }

  protected override onError(error: unknown): void {
    this.reads.land(this, { status: 'failed', key: this.key, requests: this.requests, error });
  }

  protected override onComplete(): void {
    this.reads.land(this, { status: 'failed', key: this.key, requests: this.requests, error: new NoAnswerError() });
  }
}
