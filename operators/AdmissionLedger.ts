import { Observable, SchedulerLike, Subject, asyncScheduler } from 'rxjs';

/** Why an offer was refused: the key is held by a recent sighting, or the queue is full. */
export type RefusalReason = 'held' | 'full';

/** How many keys the ledger holds, and how many of them are admitted but not yet started. */
export interface LedgerSizes {
  readonly held: number;
  readonly queued: number;
}

/** What the ledger needs to know to decide. */
export interface AdmissionLedgerConfig<V, K> {
  /** The identity of a value: two values with the same key are sightings of the same thing. */
  key: (value: V) => K;
  /**
   * Milliseconds. A key already held is refused while the sighting held is younger than this;
   * once it is older, a new sighting supersedes it.
   */
  window: number;
  /** Most tickets that may be admitted and not yet started at once. */
  capacity: number;
  /** Its `now()` is the clock sightings are timed by. Defaults to `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/** A refused offer, with the reason and, when the key was held, the ticket that holds it. */
export interface Refusal<V, K> {
  readonly admitted: false;
  readonly value: V;
  readonly key: K;
  readonly reason: RefusalReason;
  readonly holder?: Ticket<V, K>;
}

/** An admitted offer. */
export interface Admitted<V, K> {
  readonly admitted: true;
  readonly ticket: Ticket<V, K>;
  /** The ticket this one superseded, now stale, when the key was already held. */
  readonly superseded?: Ticket<V, K>;
}

export type Admission<V, K> = Admitted<V, K> | Refusal<V, K>;

/**
 * Where a ticket is in its life. `queued`, `started` and `holding` (the work is done, the key is
 * kept a while longer) are current; `stale` and `released` are not.
 */
export type TicketState = 'queued' | 'started' | 'holding' | 'stale' | 'released';

/**
 * The ledger's receipt for one admitted sighting. A worker holds it while it works, asks it
 * whether it is still current, and releases it when done.
 */
export class Ticket<V, K> {
  private state_: TicketState = 'queued';
  private startedAt_: number | undefined;

  /** @internal Tickets are made by {@link AdmissionLedger.offer}. */
  constructor(
    private readonly ledger: AdmissionLedger<V, K>,
    readonly value: V,
    readonly key: K,
    /** When the sighting was admitted, by the ledger's clock. */
    readonly admittedAt: number,
  ) {}

  get state(): TicketState {
    return this.state_;
  }

  /** When a worker started it, by the ledger's clock; `undefined` until then. */
  get startedAt(): number | undefined {
    return this.startedAt_;
  }

  /** True while the ledger still holds this ticket for its key (not superseded, reset or released). */
  isCurrent(): boolean {
    return this.state_ === 'queued' || this.state_ === 'started' || this.state_ === 'holding';
  }

  /**
   * Takes the ticket off the queue because a worker is starting it. Returns false, changing
   * nothing, if the ticket went stale while it waited: the worker must then skip it.
   */
  start(): boolean {
    if (this.state_ !== 'queued') return this.state_ === 'started';
    this.state_ = 'started';
    this.startedAt_ = this.ledger._started();
    return true;
  }

  /**
   * Says the work is done but the key stays held until `release()` (a node restarting after it was
   * configured must not be caught by the next discovery halfway). A holding ticket is never
   * superseded by age: the window exists to unstick work that may never finish, and this work has.
   * Only a started ticket can hold; otherwise nothing changes.
   */
  hold(): void {
    if (this.state_ === 'started') this.state_ = 'holding';
  }

  /**
   * Frees the key, if this ticket still holds it, so the next sighting is admitted. Releasing a
   * stale ticket changes nothing: its key may already belong to a newer ticket.
   */
  release(): void {
    if (!this.isCurrent()) return;
    this.ledger._release(this);
  }

  /** @internal */
  _setState(state: TicketState): void {
    this.state_ = state;
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
 * - `queued` always equals the number of admitted tickets not yet started, superseded or reset;
 *   `held` the number of keys held. `sizes$` replays the current sizes and emits every change.
 * - `reset()` forgets every key at once and makes every outstanding ticket stale, queued or
 *   started, so nothing admitted before the reset is worked on afterwards.
 * - A ticket only ever frees its own key: a stale ticket's `release()` cannot free a newer one.
 */
export class AdmissionLedger<V, K> {
  private readonly holders = new Map<K, Ticket<V, K>>();
  private queuedCount = 0;
  // A signal, not a BehaviorSubject of sizes: with nobody watching (a benchmark, a library user
  // without gauges) a decision allocates nothing for it.
  private readonly changed = new Subject<void>();
  private readonly keyOf: (value: V) => K;
  private readonly window: number;
  private readonly capacity: number;
  private readonly scheduler: SchedulerLike;

  /** The current sizes on subscription, then every change (for gauges). */
  readonly sizes$: Observable<LedgerSizes> = new Observable<LedgerSizes>((subscriber) => {
    subscriber.next(this.currentSizes());
    return this.changed.subscribe(() => subscriber.next(this.currentSizes()));
  });

  constructor(config: AdmissionLedgerConfig<V, K>) {
    if (!(config.window >= 0)) throw new RangeError(`window must be >= 0, got ${config.window}`);
    if (!(config.capacity >= 0)) throw new RangeError(`capacity must be >= 0, got ${config.capacity}`);
    this.keyOf = config.key;
    this.window = config.window;
    this.capacity = config.capacity;
    this.scheduler = config.scheduler ?? asyncScheduler;
  }

  /** Number of keys held: queued, being worked on, or waiting out a delayed release. */
  get held(): number {
    return this.holders.size;
  }

  /** Number of admitted tickets that no worker has started yet. */
  get queued(): number {
    return this.queuedCount;
  }

  /** The ticket holding `key`, if any. */
  holder(key: K): Ticket<V, K> | undefined {
    return this.holders.get(key);
  }

  /** Decides on one sighting; see the class comment for the rules. */
  offer(value: V): Admission<V, K> {
    let refusal: Refusal<V, K> | undefined;
    const held = this.holders.get(this.keyOf(value));
    const ticket = this.decide(value, (r) => (refusal = r));
    if (ticket === undefined) return refusal as Refusal<V, K>;
    return held === undefined ? { admitted: true, ticket } : { admitted: true, ticket, superseded: held };
  }

  /**
   * @internal The decision without a result object: the admitted ticket, or `undefined` after
   * `refuse` was told why. The `admit` operator's hot path.
   */
  decide(value: V, refuse?: (refusal: Refusal<V, K>) => void): Ticket<V, K> | undefined {
    const key = this.keyOf(value);
    const now = this.scheduler.now();
    const held = this.holders.get(key);
    if (held !== undefined) {
      // Work in hand is judged by how long it has run, not how long it queued first.
      if (held.state === 'holding' || now - (held.startedAt ?? held.admittedAt) < this.window) {
        refuse?.({ admitted: false, value, key, reason: 'held', holder: held });
        return undefined;
      }
      this.forget(held);
    }
    if (this.queuedCount >= this.capacity) {
      if (held !== undefined) this.publish();
      refuse?.({ admitted: false, value, key, reason: 'full' });
      return undefined;
    }
    const ticket = new Ticket(this, value, key, now);
    this.holders.set(key, ticket);
    this.queuedCount++;
    this.publish();
    return ticket;
  }

  /** Forgets every key and makes every outstanding ticket stale. */
  reset(): void {
    for (const ticket of this.holders.values()) ticket._setState('stale');
    this.holders.clear();
    this.queuedCount = 0;
    this.publish();
  }

  /** @internal Called by a ticket a worker started; returns the time it started. */
  _started(): number {
    this.queuedCount--;
    this.publish();
    return this.scheduler.now();
  }

  /** @internal Called by a current ticket that is done with its key. */
  _release(ticket: Ticket<V, K>): void {
    if (ticket.state === 'queued') this.queuedCount--;
    ticket._setState('released');
    this.holders.delete(ticket.key);
    this.publish();
  }

  private forget(ticket: Ticket<V, K>): void {
    if (ticket.state === 'queued') this.queuedCount--;
    ticket._setState('stale');
    this.holders.delete(ticket.key);
  }

  private currentSizes(): LedgerSizes {
    return { held: this.holders.size, queued: this.queuedCount };
  }

  private publish(): void {
    if (this.changed.observed) this.changed.next();
  }
}
