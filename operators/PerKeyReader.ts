import { ObservableInput } from 'rxjs';
import { NoAnswerError } from './errors.js';
import { checkFunction, checkOptionalFunction } from './internal/checks.js';
import { OperatorSubscriber, Output, subscribeInner } from './internal/OperatorSubscriber.js';
import { reportUnhandled } from './internal/unhandled.js';
import type { SlotClaim, SlotPool } from './SlotPool.js';

/**
 * What every {@link ReadResult} carries.
 *
 * @group What the operators take and give
 */
export interface ReadLanded<T, K> {
  /** The key that was read. */
  readonly key: K;
  /** Every request the answer is for, in arrival order (those a superseded read carried come first). */
  readonly requests: readonly T[];
}

/**
 * The read answered.
 *
 * @group What the operators take and give
 */
export interface ReadAnswered<T, K, R> extends ReadLanded<T, K> {
  /** Tells an answer from the other endings. */
  readonly status: 'answered';
  /** The read's first value. */
  readonly value: R;
}

/**
 * The read errored, its factory threw, or it completed without an answer (`NoAnswerError`).
 *
 * @group What the operators take and give
 */
export interface ReadFailed<T, K> extends ReadLanded<T, K> {
  /** Tells a failure from the other endings. */
  readonly status: 'failed';
  /** What the read failed with ({@link NoAnswerError} when it completed without an answer). */
  readonly error: unknown;
}

/**
 * The read was cancelled through `cancel` before it answered.
 *
 * @group What the operators take and give
 */
export interface ReadCancelled<T, K> extends ReadLanded<T, K> {
  /** Tells a cancel from the other endings. */
  readonly status: 'cancelled';
}

/**
 * How one read ended, for all the requests that waited on it.
 *
 * @group What the operators take and give
 */
export type ReadResult<T, K, R> = ReadAnswered<T, K, R> | ReadFailed<T, K> | ReadCancelled<T, K>;

/**
 * Options for {@link PerKeyReader}.
 *
 * @group Options
 */
export interface PerKeyReaderConfig<T, K, R> {
  /** What a request reads: requests with the same key share one read. */
  key: (request: T) => K;
  /**
   * The read for the flight `lead` leads, as an Observable factory, called when the read starts:
   * its first value is the answer. With `slots`, the read holds its slot until it lands, or until
   * it calls `giveBack()` (a read that waits between its calls gives its slot back and takes one per
   * call itself).
   */
  read: (lead: T, giveBack: () => void) => ObservableInput<R>;
  /** Reads start once they hold a slot of this pool, first come, first served. Default: at once. */
  slots?: SlotPool;
  /**
   * Whether `next` needs more than the read for `running` can give: the running read is then
   * aborted and a read for `next` takes its place, with every request along. Default: never.
   */
  supersedes?: (next: T, running: T) => boolean;
  /**
   * Whether `request` must be answered by a read that started after it arrived. Such a request
   * arriving once its key's read has started (while it waits for a slot it is still joined) does
   * not join it: it waits, and the requests that came that way are read together, in arrival
   * order, when that read answers (led by the one that superseded the others). Default: never.
   */
  fresh?: (request: T) => boolean;
  /** Told how each read ended, once, for every request that waited on it. */
  onLanded: (result: ReadResult<T, K, R>) => void;
  /**
   * Where a throw from `onLanded` goes (see the class comment). Default: rxjs's path for an error
   * with nowhere to go (`config.onUnhandledError`, or thrown on a later turn).
   */
  onError?: (error: unknown) => void;
}

/**
 * One read for one key: the subscriber to it, its requests, and its slot. A flight waiting for a
 * slot is this object in the pool's line and nothing else.
 */
class Flight<T, K, R> extends OperatorSubscriber<R> {
  /** Arrived once the read started and must be read again afterwards (made when needed). */
  late: T[] | undefined = undefined;
  /** Every request, joined or late, in arrival order: made with the first latecomer. */
  all: T[] | undefined = undefined;
  /** Who leads the latecomers' read: the one that superseded the others. */
  lateLead: T | undefined = undefined;
  started = false;
  /** Retired: superseded, cancelled, landed or disposed. Nothing it says from then on lands. */
  done = false;
  claim: SlotClaim | undefined = undefined;
  /** Gives the slot back early; handed to `read`. */
  readonly giveBack = (): void => this.claim?.giveBack();

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
    this.reads.land(this, { status: 'failed', key: this.key, requests: withLate(this), error });
  }

  protected override onComplete(): void {
    this.reads.land(this, { status: 'failed', key: this.key, requests: withLate(this), error: new NoAnswerError() });
  }
}

const withLate = <T>(flight: { requests: T[]; all: T[] | undefined }): T[] => flight.all ?? flight.requests;

/**
 * One read in flight per key, as a synchronous core: the caller asks for reads from anywhere in
 * its own code (an operator's closure, a landing that needs another read) and is told how each one
 * landed. {@link readPerKey} is this core as an operator over a stream of requests (one core per
 * subscription), the way {@link AdmissionLedger} backs `admit`; the core is public for an owner
 * whose reads are asked for by what its earlier reads found, which a stream could only express by
 * feeding its output back into its input through a Subject.
 *
 * ```
 * key = first letter; x = a1, s = a! (supersedes), y = a2; every request fresh;
 * a read answers 3 ms after it starts
 * request:  xsy------
 * read(x):  ^!           aborted by s: its answer never lands
 * read(s):  -^--A        x and s land with A
 * read(y):  ----^--B     y came after read(s) started: it is read again once A has landed
 * landed:   ----A--B
 * ```
 *
 * Guarantees:
 * - Per key, at most one read runs. A request joins it, unless `supersedes` says it needs more
 *   (the running read is unsubscribed, which aborts it, and a new one starts for every request so
 *   far, in arrival order, then this one), or `fresh` says it must not take an answer the read
 *   could have had before it arrived (it waits for the key's next read).
 * - With `slots`, a read starts once it holds a slot, first come, first served; a read waiting for
 *   its slot can still be joined, superseded or cancelled, and costs nothing but its place in the
 *   line. The slot goes back after the read lands (once `onLanded` has been told, so the next read
 *   cannot land first) or is aborted, or earlier if the read calls `giveBack`.
 * - `onLanded` is told exactly once per read that was not superseded: `answered` with its first
 *   value, `failed` when it errors, completes without a value ({@link NoAnswerError}) or `read`
 *   throws, `cancelled` when `cancel(key)` stops it. Requests come in arrival order. A failure or
 *   a cancel is shared by the latecomers (a failure says the server could not be read now, which
 *   is as true for them); an answer is not: their read is in the books before `onLanded` is told,
 *   so a request `onLanded` makes for the key joins it, and it starts right after.
 * - A superseded or cancelled read's answer never lands, even one arriving during the abort.
 * - `dispose()` aborts every read without telling anyone; later requests are ignored.
 *
 * A callback that throws never leaves the books half-updated:
 * - `key`, `supersedes` and `fresh` are asked inside `request`, before anything changes: a throw
 *   comes out of `request` and the request was never made.
 * - `read` throwing (or returning something that is not an `ObservableInput`) is a `failed` landing.
 * - `onLanded` is told once the books are done (the read retired, its latecomers' read in place).
 *   What it throws goes to `onError` (readPerKey's is its output's error); without one, to rxjs's
 *   path for an error with nowhere to go (`config.onUnhandledError`, or thrown on a later turn),
 *   never back into whatever called the core: that is often a read's producer, which could not
 *   take it. The slot is given back and the latecomers' read started either way.
 *
 * Not thread-safe by design: one owner asks, as an operator's closure does. `onLanded` may ask
 * for more reads.
 *
 * @example An owner that reads an instance, then the network it sits on, which the first read found
 * ```ts
 * const reads: PerKeyReader<string, string, { network?: string }> = new PerKeyReader({
 *   key: (subject: string) => subject,
 *   read: (subject) => fromAbortable((signal) => incus.get(subject, { signal })),
 *   onLanded: (result) => {
 *     const network = result.status === 'answered' ? result.value.network : undefined;
 *     if (network !== undefined) reads.request(`net/${network}`);
 *   },
 *   slots: new SlotPool(8),
 * });
 * reads.request('ins/default/web1');
 * ```
 *
 * @group Cores
 */
export class PerKeyReader<T, K, R> {
  readonly #reads: Reads<T, K, R>;

  /**
   * @param config `key`, `read`, `onLanded` (required), `slots`, `supersedes`, `fresh`, `onError`.
   * @throws TypeError if a callback is not a function.
   */
  constructor(config: PerKeyReaderConfig<T, K, R>) {
    checkFunction('PerKeyReader', 'key', config.key);
    checkFunction('PerKeyReader', 'read', config.read);
    checkFunction('PerKeyReader', 'onLanded', config.onLanded);
    checkOptionalFunction('PerKeyReader', 'supersedes', config.supersedes);
    checkOptionalFunction('PerKeyReader', 'fresh', config.fresh);
    checkOptionalFunction('PerKeyReader', 'onError', config.onError);
    this.#reads = new Reads(config);
  }

  /** Keys with a read in flight (started or waiting for a slot). */
  get size(): number {
    return this.#reads.flights.size;
  }

  /** Whether `key` has a read in flight (started or waiting for a slot). */
  has(key: K): boolean {
    return this.#reads.flights.has(key);
  }

  /** Asks for a read of `request`'s key: joins, waits for the next, supersedes, or starts one. */
  request(request: T): void {
    this.#reads.request(request);
  }

  /** Cancels `key`'s read: its requests land `cancelled`. Whether there was one. */
  cancel(key: K): boolean {
    return this.#reads.cancel(key);
  }

  /** Aborts every read in flight without a result; nothing is asked for again. */
  dispose(): void {
    this.#reads.dispose();
  }
}

/** The books behind a {@link PerKeyReader}, kept out of its public type. */
class Reads<T, K, R> {
  readonly flights = new Map<K, Flight<T, K, R>>();
  private disposed = false;
  /** Where a throw from a handler of a read's subscriber goes. */
  readonly output: Output;

  constructor(private readonly config: PerKeyReaderConfig<T, K, R>) {
    const { onError } = config;
    // A throw in a read subscriber's handler, or from `onLanded`, goes here.
    this.output = { error: onError ?? reportUnhandled, complete: () => undefined };
  }

  request(request: T): void {
    if (this.disposed) return;
    const { supersedes, fresh } = this.config;
    const key = this.config.key(request);
    const current = this.flights.get(key);
    if (current === undefined) {
      this.begin(this.enter(key, request, [request]));
      return;
    }
    // Every question is asked before anything changes: a callback that throws changes nothing.
    const stronger = supersedes !== undefined && supersedes(request, current.lead);
    if (stronger) {
      this.retire(current);
      this.begin(this.enter(key, request, [...withLate(current), request]));
      return;
    }
    if (current.started && fresh !== undefined && fresh(request)) {
      const leads = current.lateLead === undefined || (supersedes !== undefined && supersedes(request, current.lateLead));
      (current.all ??= [...current.requests]).push(request);
      (current.late ??= []).push(request);
      if (leads) current.lateLead = request;
      return;
    }
    current.requests.push(request);
    current.all?.push(request);
  }

  cancel(key: K): boolean {
    const flight = this.flights.get(key);
    if (flight === undefined) return false;
    this.retire(flight, true);
    try {
      this.tell({ status: 'cancelled', key, requests: withLate(flight) });
    } finally {
      flight.claim?.giveBack();
    }
    return true;
  }

  dispose(): void {
    this.disposed = true;
    for (const flight of [...this.flights.values()]) this.retire(flight);
  }

  /** A read answered, failed or completed empty. */
  land(flight: Flight<T, K, R>, result: ReadResult<T, K, R>): void {
    if (flight.done) return;
    this.retire(flight, true);
    // The latecomers' read is in the books before anyone is told, so a request made from
    // `onLanded` for this key joins it; it starts once the slot this read held is free.
    const next =
      result.status === 'answered' && flight.late !== undefined ? this.enter(flight.key, flight.lateLead as T, flight.late) : undefined;
    try {
      this.tell(result);
    } finally {
      flight.claim?.giveBack();
      if (next !== undefined) this.begin(next);
    }
  }

  private tell(result: ReadResult<T, K, R>): void {
    try {
      this.config.onLanded(result);
    } catch (error) {
      this.output.error(error);
    }
  }

  private enter(key: K, lead: T, requests: T[]): Flight<T, K, R> {
    const flight = new Flight(this, key, lead, requests);
    this.flights.set(key, flight);
    return flight;
  }

  // Waiting for a slot costs a place in the pool's line and nothing else: no subscription is made
  // until the read starts.
  private begin(flight: Flight<T, K, R>): void {
    if (flight.done) return;
    if (this.config.slots === undefined) {
      this.start(flight);
      return;
    }
    const claim = this.config.slots.acquire((held) => {
      // Set here too: a slot free at once is granted before `acquire` returns the claim.
      flight.claim = held;
      this.start(flight);
    });
    flight.claim ??= claim;
  }

  private start(flight: Flight<T, K, R>): void {
    if (flight.done || this.disposed) {
      flight.claim?.giveBack();
      return;
    }
    flight.started = true;
    let input: ObservableInput<R>;
    try {
      input = this.config.read(flight.lead, flight.giveBack);
    } catch (error) {
      this.land(flight, { status: 'failed', key: flight.key, requests: withLate(flight), error });
      return;
    }
    subscribeInner(input, flight);
  }

  // Out of the books, and its read aborted; whatever it says from here on, even synchronously
  // while aborting, is ignored. The slot goes back now unless the caller gives it back itself
  // after telling `onLanded`.
  private retire(flight: Flight<T, K, R>, keepSlot = false): void {
    flight.done = true;
    if (this.flights.get(flight.key) === flight) this.flights.delete(flight.key);
    flight.unsubscribe();
    if (!keepSlot) flight.claim?.giveBack();
  }
}
