import { Observable, SchedulerLike, Subject, asyncScheduler } from 'rxjs';
import { checkCount, checkFunction, checkSpan } from './internal/checks.js';

/**
 * Why an offer was refused: the key is held by a recent sighting, or the queue is full.
 *
 * @group What the operators take and give
 */
export type RefusalReason = 'held' | 'full';

/**
 * How many keys the ledger holds, and how many of them are admitted but not yet started.
 *
 * @group What the operators take and give
 */
export interface LedgerSizes {
  /** Keys held: queued, being worked on, or held a while after their work. */
  readonly held: number;
  /** Admitted tickets no worker has started yet. */
  readonly queued: number;
}

/**
 * What the ledger needs to know to decide.
 *
 * @group Options
 */
export interface AdmissionLedgerConfig<V, K = unknown> {
  /**
   * The identity of a value: two values with the same key are sightings of the same thing. A
   * throw from it propagates out of `offer` and `decide` (and errors {@link admit}'s output),
   * leaving the ledger unchanged.
   */
  key: (value: V) => K;
  /**
   * Milliseconds, 0 or more. A key already held is refused while the sighting held is younger
   * than this; once it is older, a new sighting supersedes it. `Infinity`: never by age.
   */
  window: number;
  /** Most tickets that may be admitted and not yet started at once: a whole number, at least 1 (`Infinity`: no bound). */
  capacity: number;
  /** Its `now()` is the clock sightings are timed by. Defaults to `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/**
 * A refused offer, with the reason and, when the key was held, the ticket that holds it.
 *
 * @group What the operators take and give
 */
export interface Refusal<V, K = unknown> {
  /** Tells a refusal from an {@link Admitted}. */
  readonly admitted: false;
  /** The value offered. */
  readonly value: V;
  /** Its key. */
  readonly key: K;
  /** Why it was refused. */
  readonly reason: RefusalReason;
  /** The ticket holding the key, when the reason is `held`. */
  readonly holder?: Ticket<V, K>;
}

/**
 * An admitted offer.
 *
 * @group What the operators take and give
 */
export interface Admitted<V, K = unknown> {
  /** Tells an admission from a {@link Refusal}. */
  readonly admitted: true;
  /** The new ticket, holding the key. */
  readonly ticket: Ticket<V, K>;
  /** The ticket this one superseded, now stale, when the key was already held. */
  readonly superseded?: Ticket<V, K>;
}

/**
 * What {@link AdmissionLedger.offer} decided.
 *
 * @group What the operators take and give
 */
export type Admission<V, K = unknown> = Admitted<V, K> | Refusal<V, K>;

/**
 * Where a ticket is in its life. `queued`, `started` and `holding` (the work is done, the key is
 * kept a while longer) are current; `stale` and `freed` are not.
 *
 * @group What the operators take and give
 */
export type TicketState = 'queued' | 'started' | 'holding' | 'stale' | 'freed';

// The ledger's side of the books, shared with the tickets it issues. Not exported: a ticket and
// its ledger reach into it through `#` fields, so none of it shows in the public types.
class Books<V, K> {
  readonly holders = new Map<K, Ticket<V, K>>();
  queued = 0;
  // Subscribers of `sizes$`. With nobody watching (a benchmark, a library user without gauges) a
  // decision neither builds sizes nor asks a Subject whether anyone listens.
  watchers = 0;
  readonly changed = new Subject<void>();
  // Times are kept as milliseconds since the ledger was made: small integers, which V8 stores in the
  // ticket itself, where a clock reading (1.7e12) would cost every ticket a boxed number.
  readonly epoch: number;
  /** Undefined: a ticket pointing here is current. See {@link Gone}. */
  readonly gone: undefined = undefined;
  /** Where a ticket points once it is stale, or once it is freed. */
  readonly stale: Gone<V, K>;
  readonly freed: Gone<V, K>;

  constructor(readonly scheduler: SchedulerLike) {
    this.epoch = scheduler.now();
    this.stale = new Gone(this, 'stale');
    this.freed = new Gone(this, 'freed');
  }

  clock(): number {
    return this.scheduler.now() - this.epoch;
  }

  publish(): void {
    if (this.watchers > 0) this.changed.next();
  }
}

/**
 * What a ticket that is no longer current points at instead of its ledger's books: one per ledger
 * and ending, so a ticket's ending costs no field of its own (see {@link Ticket}).
 */
class Gone<V, K> {
  constructor(
    readonly books: Books<V, K>,
    readonly gone: 'stale' | 'freed',
  ) {}
}

// Set by Ticket's static block: how the ledger issues a ticket, makes it stale, and reads when its
// work last moved and whether it holds its key after its work, with the constructor and the fields
// kept private to the module.
let issue: <V, K>(books: Books<V, K>, value: V, key: K, admitted: number) => Ticket<V, K>;
let makeStale: <V, K>(ticket: Ticket<V, K>) => void;
let lastMoved: <V, K>(ticket: Ticket<V, K>) => number;
let isHolding: <V, K>(ticket: Ticket<V, K>) => boolean;

// `#started` while the ticket is queued; a started ticket holds its start time (>= 0), a holding
// one `HOLDING_BASE - start time` (<= -2), so the start time survives the hold.
const QUEUED = -1;
const HOLDING_BASE = -2;

/**
 * The ledger's receipt for one admitted sighting. A worker holds it while it works, asks it
 * whether it is still current, and frees it when done. Only an {@link AdmissionLedger} issues
 * tickets.
 *
 * @example A worker of your own, where the worker pool does not fit
 * ```ts
 * tickets$.subscribe(async (ticket) => {
 *   if (!ticket.start()) return; // stale: a newer sighting or a reset took its key
 *   try {
 *     await provision(ticket.value);
 *   } finally {
 *     ticket.free(); // the next sighting of this key is admitted
 *   }
 * });
 * ```
 *
 * @group Cores
 */
export class Ticket<V, K = unknown> {
  // Five fields, as few as a ticket can have (its books, two times, its value and key): a million
  // new keys are a million tickets the collector copies, and a sixth field costs about a tenth of
  // admission's rate. So the state is not a field: an ended ticket points at its books' `stale` or
  // `freed` marker instead of the books, and `#started` tells queued, started and holding apart.
  #books: Books<V, K> | Gone<V, K>;
  // Both by the ledger's clock, less its epoch.
  readonly #admitted: number;
  #started: number = QUEUED;

  static {
    issue = (books, value, key, admitted) => new Ticket(books, value, key, admitted);
    makeStale = (ticket) => {
      const books = ticket.#books;
      if (books.gone === undefined) ticket.#books = books.stale;
    };
    lastMoved = (ticket) => {
      const started = ticket.#started;
      return started === QUEUED ? ticket.#admitted : started >= 0 ? started : HOLDING_BASE - started;
    };
    isHolding = (ticket) => ticket.#started <= HOLDING_BASE;
  }

  private constructor(
    books: Books<V, K>,
    /** The sighting admitted. */
    readonly value: V,
    /** Its key. */
    readonly key: K,
    admitted: number,
  ) {
    this.#books = books;
    this.#admitted = admitted;
  }

  /** When the sighting was admitted, by the ledger's clock. */
  get admittedAt(): number {
    return this.#ledger().epoch + this.#admitted;
  }

  /** Where the ticket is in its life; see {@link TicketState}. */
  get state(): TicketState {
    const gone = this.#books.gone;
    if (gone !== undefined) return gone;
    const started = this.#started;
    return started === QUEUED ? 'queued' : started >= 0 ? 'started' : 'holding';
  }

  /** When a worker started it, by the ledger's clock; `undefined` until then. */
  get startedAt(): number | undefined {
    const started = this.#started;
    if (started === QUEUED) return undefined;
    return this.#ledger().epoch + (started >= 0 ? started : HOLDING_BASE - started);
  }

  /** True while the ledger still holds this ticket for its key (not superseded, reset or freed). */
  isCurrent(): boolean {
    return this.#books.gone === undefined;
  }

  /**
   * Takes the ticket off the queue because a worker is starting it. Returns false, changing
   * nothing, if the ticket went stale while it waited: the worker must then skip it. Starting a
   * ticket that is already started returns true and changes nothing.
   */
  start(): boolean {
    const books = this.#books;
    if (books.gone !== undefined || this.#started !== QUEUED) return books.gone === undefined && this.#started >= 0;
    books.queued--;
    // A clock set back to before the ledger was made counts as its epoch: a start time is never
    // negative, since negative values say queued or holding.
    this.#started = Math.max(0, books.clock());
    books.publish();
    return true;
  }

  /**
   * Says the work is done but the key stays held until `free()` (a node restarting after it was
   * configured must not be caught by the next discovery halfway). A holding ticket is never
   * superseded by age: the window exists to unstick work that may never finish, and this work has.
   * Only a started ticket can hold; otherwise nothing changes.
   */
  hold(): void {
    if (this.#books.gone === undefined && this.#started >= 0) this.#started = HOLDING_BASE - this.#started;
  }

  /**
   * Frees the key, if this ticket still holds it, so the next sighting is admitted. Freeing a
   * stale or freed ticket changes nothing: its key may already belong to a newer ticket.
   */
  free(): void {
    const books = this.#books;
    if (books.gone !== undefined) return;
    if (this.#started === QUEUED) books.queued--;
    this.#books = books.freed;
    books.holders.delete(this.key);
    books.publish();
  }

  #ledger(): Books<V, K> {
    const books = this.#books;
    return books.gone === undefined ? books : books.books;
  }
}

/**
 * A keyed ledger of admitted sightings with a bounded queue of admitted-but-not-started tickets:
 * the admission and deduplication half of a work queue.
 *
 * The rules, in order, for an offered value:
 * 1. Its key is held by a sighting younger than `window`, by a ticket started less than `window`
 *    ago, or by a ticket whose work is done and whose key is kept a while longer (`hold()`):
 *    refused, reason `held`.
 * 2. Its key is held by a ticket whose work has not finished and has not moved for `window`
 *    (queued for that long since its admission, or running for that long since its start): that
 *    ticket goes stale (a worker that has not started it will skip it) and the new sighting goes
 *    on. A duplicate costs less than a dropped node; a running ticket is judged from its start,
 *    so a backlog that kept it queued does not make its fresh work look stuck.
 * 3. `capacity` tickets are already queued: refused, reason `full`, and the key is forgotten, so
 *    the ledger only ever holds keys that are queued, being worked on, or held after the work.
 * 4. Otherwise admitted: the key is held by a new `queued` ticket.
 *
 * Guarantees:
 * - At most one current ticket per key, ever.
 * - `queued` always equals the number of admitted tickets not yet started, superseded or reset;
 *   `held` the number of keys held. `sizes$` replays the current sizes and emits every change.
 * - `reset()` forgets every key at once and makes every outstanding ticket stale, queued or
 *   started, so nothing admitted before the reset is worked on afterwards.
 * - A ticket only ever frees its own key: a stale ticket's `free()` cannot free a newer one.
 *
 * One type argument is enough (`AdmissionLedger<Node>`): the key type then defaults to `unknown`,
 * and a ledger typed with its key (`AdmissionLedger<Node, string>`) is assignable to it.
 *
 * @example
 * ```ts
 * const ledger = new AdmissionLedger({ key: (node: Node) => node.id, window: 60_000, capacity: 50_000 });
 * ledger.sizes$.subscribe(({ held, queued }) => gauges.set(held, queued));
 * ```
 *
 * @group Cores
 */
export class AdmissionLedger<V, K = unknown> {
  readonly #books: Books<V, K>;
  readonly #keyOf: (value: V) => K;
  readonly #window: number;
  readonly #capacity: number;

  /** The current sizes on subscription, then every change (for gauges). */
  readonly sizes$: Observable<LedgerSizes>;

  /**
   * @param config `key`, `window`, `capacity`, `scheduler`.
   * @throws RangeError if `window` is negative or not a number, or `capacity` is not a whole
   * number of at least 1 (nor `Infinity`); TypeError if `key` is not a function.
   */
  constructor(config: AdmissionLedgerConfig<V, K>) {
    checkFunction('AdmissionLedger', 'key', config.key);
    checkSpan('AdmissionLedger', 'window', config.window);
    checkCount('AdmissionLedger', 'capacity', config.capacity, 1);
    const books = new Books<V, K>(config.scheduler ?? asyncScheduler);
    this.#books = books;
    this.#keyOf = config.key;
    this.#window = config.window;
    this.#capacity = config.capacity;
    this.sizes$ = new Observable<LedgerSizes>((subscriber) => {
      subscriber.next({ held: books.holders.size, queued: books.queued });
      books.watchers++;
      const changes = books.changed.subscribe(() => subscriber.next({ held: books.holders.size, queued: books.queued }));
      return () => {
        books.watchers--;
        changes.unsubscribe();
      };
    });
  }

  /** Number of keys held: queued, being worked on, or held a while after their work. */
  get held(): number {
    return this.#books.holders.size;
  }

  /** Number of admitted tickets that no worker has started yet. */
  get queued(): number {
    return this.#books.queued;
  }

  /** The ticket holding `key`, if any. */
  holder(key: K): Ticket<V, K> | undefined {
    return this.#books.holders.get(key);
  }

  /** Decides on one sighting; see the class comment for the rules. */
  offer(value: V): Admission<V, K> {
    let refusal: Refusal<V, K> | undefined;
    const held = this.#books.holders.get(this.#keyOf(value));
    const ticket = this.decide(value, (r) => (refusal = r));
    if (ticket === undefined) return refusal as Refusal<V, K>;
    return held === undefined ? { admitted: true, ticket } : { admitted: true, ticket, superseded: held };
  }

  /**
   * Decides on one sighting, as `offer` does, without building a result object: returns the
   * admitted ticket, or `undefined` after telling `refuse` why. The {@link admit} operator's hot
   * path. A `refuse` that throws propagates; the decision stands.
   */
  decide(value: V, refuse?: (refusal: Refusal<V, K>) => void): Ticket<V, K> | undefined {
    const key = this.#keyOf(value);
    const books = this.#books;
    const now = books.clock();
    const held = books.holders.get(key);
    if (held !== undefined) {
      // Work in hand is judged by how long it has run, not how long it queued first.
      if (isHolding(held) || now - lastMoved(held) < this.#window) {
        refuse?.({ admitted: false, value, key, reason: 'held', holder: held });
        return undefined;
      }
      if (held.state === 'queued') books.queued--;
      makeStale(held);
      books.holders.delete(key);
    }
    if (books.queued >= this.#capacity) {
      if (held !== undefined) books.publish();
      refuse?.({ admitted: false, value, key, reason: 'full' });
      return undefined;
    }
    const ticket = issue(books, value, key, now);
    books.holders.set(key, ticket);
    books.queued++;
    books.publish();
    return ticket;
  }

  /** Forgets every key and makes every outstanding ticket stale. */
  reset(): void {
    const books = this.#books;
    for (const ticket of books.holders.values()) makeStale(ticket);
    books.holders.clear();
    books.queued = 0;
    books.publish();
  }
}
