import { ObservableInput, Subscription, from } from 'rxjs';
import type { ReadResult } from './readPerKey';
import type { SlotClaim, SlotPool } from './SlotPool';

/** Options for {@link KeyedReads}. */
export interface KeyedReadsConfig<T, K, R> {
  /** What a request reads: requests with the same key share one read. */
  key: (request: T) => K;
  /**
   * The read for the flight `lead` leads, as an Observable factory, called when the read starts:
   * its first value is the answer. With `slots`, the read holds its slot until it answers, or until
   * it calls `release()` (a read that waits between its calls gives its slot back and takes one per
   * call itself).
   */
  read: (lead: T, release: () => void) => ObservableInput<R>;
  /** Reads start once they have a slot of this pool, in the order they were asked for. Default: at once. */
  slots?: SlotPool;
  /**
   * Whether `next` needs more than the read running for `running` can give: the running read is
   * then aborted and a read for `next` takes its place, with every request along. Default: never.
   */
  supersedes?: (next: T, running: T) => boolean;
  /**
   * Whether `request` must be answered by a read that started after it arrived. Such a request
   * arriving once its key's read has started (while it waits for a slot it is still joined) does
   * not join it: it waits, and the requests that came
   * that way are read again together, in arrival order, when that read answers. Default: never.
   */
  fresh?: (request: T) => boolean;
  /** Told how each read ended, once, for every request that waited on it. */
  onLanded: (result: ReadResult<T, K, R>) => void;
}

/** A request and when it first arrived, counted across every key. */
interface Waiting<T> {
  readonly request: T;
  readonly arrival: number;
}

interface Flight<T, K> {
  readonly key: K;
  readonly lead: T;
  /** Answered by this read: everything that came before it started, and what joins regardless. */
  readonly requests: Waiting<T>[];
  /** Arrived after it started and must be answered by a read that started after them (made when needed). */
  late: Waiting<T>[] | undefined;
  /** The arrival count when the read started; `undefined` while it waits for a slot. */
  startedAt: number | undefined;
  claim: SlotClaim | undefined;
  subscription: Subscription | undefined;
  done: boolean;
}

/**
 * One read in flight per key, as a synchronous core: the caller asks for reads from anywhere in
 * its own code (an operator's closure, a landing that needs another read) and is told how each one
 * landed. `readPerKey` is the same rule as an operator over a stream of requests; this is the
 * ledger behind it, the way {@link AdmissionLedger} backs `admit` and {@link OrderedLine} backs
 * `releaseInOrder`, for an owner whose reads are asked for by what its earlier reads found, which a
 * stream could only express by feeding its output back into its input through a Subject.
 *
 * ```
 * key = first letter; x = a1, y = a2, s = a! (supersedes); every request fresh;
 * a read starts when asked and answers 3 ms later
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
 *   could have had before it arrived (it waits for the next read of the key).
 * - With `slots`, a read starts once it has a slot, reads waiting in the order they were asked
 *   for; a read waiting for its slot can still be joined, superseded or cancelled, and costs
 *   nothing but its place in the line. The slot goes back when the read lands or is aborted, or
 *   earlier if the read releases it.
 * - `onLanded` is told exactly once per read that was not superseded: `answered` with its first
 *   value, `failed` when it errors, completes without a value or `read` throws, `cancelled` when
 *   `cancel(key)` stops it. Requests come in arrival order. A failure or a cancel is shared by the
 *   requests waiting for the next read (a failure says the server could not be read now, which is
 *   as true for them); an answer is not: they are asked again, before `onLanded` is told.
 * - A superseded or cancelled read's answer never lands, even one arriving during the abort.
 * - `key`, `supersedes` or `fresh` throwing throws out of `request`, changing nothing.
 * - `dispose()` aborts every read without telling anyone; later requests are ignored.
 *
 * Not thread-safe by design: one owner asks, as an operator's closure does. `onLanded` may ask
 * for more reads (it is called with the key's flight already gone).
 */
export class KeyedReads<T, K, R> {
  private readonly flights = new Map<K, Flight<T, K>>();
  private arrivals = 0;
  private disposed = false;

  constructor(private readonly config: KeyedReadsConfig<T, K, R>) {}

  /** Keys with a read in flight. */
  get size(): number {
    return this.flights.size;
  }

  /** Whether `key` has a read in flight (begun or not). */
  has(key: K): boolean {
    return this.flights.has(key);
  }

  /** Asks for a read of `request`'s key: joins, waits for the next, supersedes, or starts one. */
  request(request: T): void {
    if (this.disposed) return;
    this.ask({ request, arrival: ++this.arrivals });
  }

  // A latecomer asked again keeps its first arrival: it came before the next read started.
  private ask(waiting: Waiting<T>): void {
    const { supersedes, fresh } = this.config;
    const { request } = waiting;
    const key = this.config.key(request);
    const current = this.flights.get(key);
    if (current === undefined) {
      this.launch(key, request, [waiting]);
      return;
    }
    const stronger = supersedes !== undefined && supersedes(request, current.lead);
    const late = !stronger && current.startedAt !== undefined && waiting.arrival > current.startedAt && fresh !== undefined && fresh(request);
    if (stronger) {
      this.retire(current);
      this.launch(key, request, current.late === undefined ? [...current.requests, waiting] : [...current.requests, ...current.late, waiting]);
    } else if (late) {
      (current.late ??= []).push(waiting);
    } else {
      current.requests.push(waiting);
    }
  }

  /** Cancels `key`'s read: its requests land `cancelled`. Whether there was one. */
  cancel(key: K): boolean {
    const flight = this.flights.get(key);
    if (flight === undefined) return false;
    this.retire(flight);
    this.config.onLanded({ status: 'cancelled', key, requests: requestsOf(flight.requests, flight.late) });
    return true;
  }

  /** Aborts every read in flight without a result; the reads are not asked for again. */
  dispose(): void {
    this.disposed = true;
    for (const flight of [...this.flights.values()]) this.retire(flight);
  }

  private launch(key: K, lead: T, requests: Waiting<T>[]): void {
    const flight: Flight<T, K> = { key, lead, requests, late: undefined, startedAt: undefined, claim: undefined, subscription: undefined, done: false };
    this.flights.set(key, flight);
    // Waiting for a slot costs a place in the pool's line and nothing else: no subscription is
    // made until the read starts.
    if (this.config.slots === undefined) {
      this.start(flight);
      return;
    }
    // Kept at once, so that a flight retired while it waits takes its claim out of the line; the
    // callback sets it too, for a slot free at once (it runs before `acquire` returns).
    const claim = this.config.slots.acquire((held) => {
      flight.claim = held;
      this.start(flight);
    });
    flight.claim ??= claim;
  }

  private start(flight: Flight<T, K>): void {
    if (flight.done) {
      flight.claim?.release();
      return;
    }
    flight.startedAt = this.arrivals;
    let input: ObservableInput<R>;
    try {
      input = this.config.read(flight.lead, () => flight.claim?.release());
    } catch (error) {
      this.land(flight, { status: 'failed', error });
      return;
    }
    // Set before subscribing: an answer during `subscribe` unsubscribes it, and what is added to a
    // closed subscription is unsubscribed at once.
    const subscription = new Subscription();
    flight.subscription = subscription;
    let answered = false;
    subscription.add(
      from(input).subscribe({
        next: (value) => {
          answered = true;
          this.land(flight, { status: 'answered', value });
        },
        error: (error: unknown) => this.land(flight, { status: 'failed', error }),
        complete: () => {
          if (!answered) this.land(flight, { status: 'failed', error: new Error('read completed without an answer') });
        },
      }),
    );
  }

  private land(flight: Flight<T, K>, outcome: { status: 'answered'; value: R } | { status: 'failed'; error: unknown }): void {
    if (flight.done) return;
    this.retire(flight);
    const { key } = flight;
    if (outcome.status === 'answered') {
      for (const waiting of flight.late ?? []) this.ask(waiting);
      this.config.onLanded({ status: 'answered', key, requests: requestsOf(flight.requests), value: outcome.value });
    } else {
      this.config.onLanded({ status: 'failed', key, requests: requestsOf(flight.requests, flight.late), error: outcome.error });
    }
  }

  private retire(flight: Flight<T, K>): void {
    flight.done = true;
    if (this.flights.get(flight.key) === flight) this.flights.delete(flight.key);
    flight.subscription?.unsubscribe();
    flight.claim?.release();
  }
}

function requestsOf<T>(requests: Waiting<T>[], late?: Waiting<T>[]): T[] {
  const out = requests.map((waiting) => waiting.request);
  if (late !== undefined) for (const waiting of late) out.push(waiting.request);
  return out;
}
