import { Observable, ObservableInput, Subscriber } from 'rxjs';
import { OperatorSubscriber, subscribeInner } from './internal/OperatorSubscriber.js';
import { RingQueue } from './RingQueue.js';
import { checkCount } from './internal/checks.js';

/**
 * A place in a {@link SlotPool}'s line, then a slot: see {@link SlotPool.acquire}.
 *
 * @group What the operators take and give
 */
export interface SlotClaim {
  /** Gives the slot back, or leaves the line if it is still waiting. Later calls do nothing. */
  giveBack(): void;
}

class Claim implements SlotClaim {
  state: 'waiting' | 'holding' | 'done' = 'waiting';

  constructor(
    private readonly slots: Slots,
    readonly start: (claim: SlotClaim) => void,
  ) {}

  giveBack(): void {
    const held = this.state === 'holding';
    this.state = 'done';
    if (held) this.slots.giveBack();
  }
}

/** The books behind a {@link SlotPool}, kept out of its public type. */
class Slots {
  running = 0;
  readonly line = new RingQueue<Claim>();
  private granting = false;

  constructor(
    /** How many claims may hold a slot at once. */
    readonly size: number,
  ) {}

  giveBack(): void {
    this.running--;
    this.grant();
  }

  grant(): void {
    if (this.granting) return;
    this.granting = true;
    let errors: unknown[] | undefined;
    try {
      while (this.running < this.size && this.line.length > 0) {
        const next = this.line.shift() as Claim;
        if (next.state !== 'waiting') continue;
        next.state = 'holding';
        this.running++;
        try {
          next.start(next);
        } catch (error) {
          // A start that throws has not taken its slot; the line goes on being served.
          next.giveBack();
          (errors ??= []).push(error);
        }
      }
    } finally {
      this.granting = false;
    }
    if (errors !== undefined) throw errors.length === 1 ? errors[0] : new AggregateError(errors, `${errors.length} SlotPool starts threw`);
  }
}

/**
 * A number of slots shared by work started from anywhere: at most `size` pieces of work run at
 * once, the rest wait their turn in arrival order.
 *
 * `mergeMap`'s concurrency bounds one stream's inner work. A pool bounds work that belongs to no
 * one stream: calls to one server made by several readers, or the separate steps of one long job
 * that must not hold a slot while it waits between them (a read polling for an address every
 * 150 ms takes a slot for each poll, not for the seconds in between, so a few slow jobs cannot
 * starve everything else).
 *
 * ```
 * size = 1; a = cold('-a|'), b = cold('-b|'), both subscribed at 0
 * pool.run(() => a): -a|
 * pool.run(() => b): ---b|     (b waits for a's slot, is subscribed at 2, answers a frame later)
 * ```
 *
 * Guarantees:
 * - At most `size` claims hold a slot at once, and slots go to waiting claims in the order they
 *   asked (first come, first served), also when a claim asks from inside a start or a give-back
 *   (a consumer starting more work from an emission): the line is a ring drained by one loop,
 *   never recursively, so a slot freed inside that loop goes to the oldest waiter.
 * - No claim waits while a slot is free: whatever a start does, the loop serves the line to the end.
 * - `acquire(start)`, the core: `start` is called once the claim holds a slot, and the slot is held
 *   until `claim.giveBack()`. A claim given back while it waits leaves the line without a slot.
 * - `start` throwing is a start that did not take its slot: the claim is given back (the slot goes
 *   to the next waiter), the line is served on, and the error is thrown out of the call that
 *   granted the slot (`acquire`, or the `giveBack` that made one free) once it has; errors from several
 *   starts in one pass are thrown together as an `AggregateError`.
 * - `run(work)` and {@link withSlot} are the operator side, on this line: see {@link SlotPool.run}.
 *
 * @example Four calls to one server at once, from an operator, a factory and an owner's own code
 * ```ts
 * const server = new SlotPool(4);
 * const web1$ = fromAbortable((signal) => incus.getInstance('default', 'web1', { signal })).pipe(withSlot(server));
 * const web2$ = server.run(() => fromAbortable((signal) => incus.getInstance('default', 'web2', { signal })));
 * server.acquire((held) => void poll().finally(() => held.giveBack())); // a slot for each poll, none between them
 * ```
 *
 * @group Cores
 */
export class SlotPool {
  readonly #slots: Slots;

  /** @throws RangeError if `size` is not a whole number of at least 1 (nor `Infinity`). */
  constructor(
    /** How many claims may hold a slot at once: a whole number, at least 1 (`Infinity`: no bound). */
    readonly size: number,
  ) {
    checkCount('SlotPool', 'size', size, 1);
    this.#slots = new Slots(size);
  }

  /** Claims holding a slot now. */
  get busy(): number {
    return this.#slots.running;
  }

  /** Claims waiting for a slot (including ones given back but not yet reached). */
  get waiting(): number {
    return this.#slots.line.length;
  }

  /**
   * Joins the line for a slot: `start` is called with the claim once one is free (before
   * `acquire` returns, if one is), and the slot is held until `claim.giveBack()`. Giving back a claim
   * that still waits takes it out of the line. No subscription is made while a claim waits: it is
   * its place in the ring and nothing else.
   *
   * @throws What `start` threw, if it threw while this call granted slots (the claim given back).
   */
  acquire(start: (claim: SlotClaim) => void): SlotClaim {
    const slots = this.#slots;
    const claim = new Claim(slots, start);
    slots.line.push(claim);
    slots.grant();
    return claim;
  }

  /**
   * The work, run in a slot of this pool. Cold: each subscription joins the line; once it holds a
   * slot, `work()` is called and subscribed and its notifications are passed on.
   *
   * - The slot is given back when the work completes or errors, before the notification is passed
   *   on (so the oldest waiter has it first), or when the subscription is unsubscribed (a waiter
   *   unsubscribed leaves the line without using a slot).
   * - `work` throwing, or returning something that is not an `ObservableInput`, errors that
   *   subscription, its slot given back.
   * - The work is subscribed through the kit's operator subscriber: nothing it does escapes to
   *   rxjs's unhandled-error hook.
   */
  run<T>(work: () => ObservableInput<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      const inner = new InSlot<T>(subscriber, work);
      inner.claim = this.acquire(inner.begin);
      return () => {
        inner.unsubscribe();
        inner.claim?.giveBack();
      };
    });
  }
}

/** One `run` subscription: the subscriber to the work, and the claim it holds or waits with. */
class InSlot<T> extends OperatorSubscriber<T> {
  claim: SlotClaim | undefined;
  /** The start callback, bound once: called by the pool when the claim holds a slot. */
  readonly begin: (claim: SlotClaim) => void;

  constructor(
    private readonly output: Subscriber<T>,
    work: () => ObservableInput<T>,
  ) {
    super(output);
    this.begin = (claim) => {
      // Set here too: a slot free at once is granted before `acquire` has returned the claim.
      this.claim = claim;
      let input: ObservableInput<T>;
      try {
        input = work();
      } catch (error) {
        this.error(error);
        return;
      }
      subscribeInner(input, this);
    };
  }

  protected onNext(value: T): void {
    this.output.next(value);
  }

  // The work is unsubscribed (its teardown run) before its slot goes to the next waiter, and the
  // slot before the notification is passed on: never more than `size` pieces of work exist at once,
  // and the oldest waiter has the slot before anyone downstream can ask for one.
  protected override onError(error: unknown): void {
    this.unsubscribe();
    this.claim?.giveBack();
    this.output.error(error);
  }

  protected override onComplete(): void {
    this.unsubscribe();
    this.claim?.giveBack();
    this.output.complete();
  }
}
