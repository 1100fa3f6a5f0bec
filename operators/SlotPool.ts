import { MonoTypeOperatorFunction, Observable, ObservableInput, Subscription, from } from 'rxjs';
import { RingQueue } from './RingQueue';

/** A place in a {@link SlotPool}'s line, then a slot: see {@link SlotPool.acquire}. */
export interface SlotClaim {
  /** Gives the slot back, or leaves the line if it is still waiting. Later calls do nothing. */
  release(): void;
}

class Claim implements SlotClaim {
  state: 'waiting' | 'holding' | 'done' = 'waiting';

  constructor(
    private readonly pool: SlotPool,
    readonly start: (claim: SlotClaim) => void,
  ) {}

  release(): void {
    const held = this.state === 'holding';
    this.state = 'done';
    if (held) this.pool._giveBack();
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
 * size = 1; a = cold('--a|'), b = cold('-b|'), subscribed together
 * pool.run(a): --a|
 * pool.run(b): ---b|        (waits for a's slot, then runs)
 * ```
 *
 * Guarantees:
 * - `acquire(start)` is the same line without Observables, for a caller keeping its own books.
 * - `run(work)` is cold: each subscription asks for a slot; once it has one, `work()` is called
 *   and subscribed, and its notifications are passed on. The slot is given back when the work
 *   completes or errors, or when the subscription is unsubscribed, before the completion or error
 *   is passed on, so the next waiter (the oldest) has it first.
 * - Waiters get slots in the order they subscribed; unsubscribing one that still waits takes it
 *   out of the line without using a slot.
 * - `work` throwing errors that subscription (its slot is given back).
 * - A slot given back inside a call that then asks for one (work answering synchronously, a
 *   consumer starting more work) is handed on in order, never recursively: the line is a ring
 *   drained by one loop.
 */
export class SlotPool {
  private running = 0;
  private readonly line = new RingQueue<Claim>();
  private granting = false;

  constructor(readonly size: number) {
    if (!(size >= 1)) throw new RangeError(`a SlotPool needs at least 1 slot, got ${size}`);
  }

  /** Work running now. */
  get busy(): number {
    return this.running;
  }

  /** Claims waiting for a slot (including ones released but not yet reached). */
  get waiting(): number {
    return this.line.length;
  }

  /**
   * Joins the line for a slot: `start` is called with the claim once one is free (at once, if one
   * is), and the slot is held until `claim.release()`. Releasing a claim that still waits takes it
   * out of the line. The callback form, for a caller that keeps its own books (no subscription is
   * made while it waits); `start` throwing propagates to whoever gave the slot back.
   */
  acquire(start: (claim: SlotClaim) => void): SlotClaim {
    const claim = new Claim(this, start);
    this.line.push(claim);
    this.grant();
    return claim;
  }

  /** The work, run in a slot of this pool: see {@link SlotPool}. */
  run<T>(work: () => ObservableInput<T>): Observable<T> {
    return new Observable<T>((subscriber) => {
      // Made before the work is subscribed: an unsubscribe during `subscribe` (work answering at
      // once to a consumer that then stops) closes it, and what is added to it later goes at once.
      const inner = new Subscription();
      const claim = this.acquire((held) => {
        let input: ObservableInput<T>;
        try {
          input = work();
        } catch (error) {
          held.release();
          subscriber.error(error);
          return;
        }
        inner.add(
          from(input).subscribe({
            next: (value) => subscriber.next(value),
            error: (error: unknown) => {
              held.release();
              subscriber.error(error);
            },
            complete: () => {
              held.release();
              subscriber.complete();
            },
          }),
        );
      });
      return () => {
        inner.unsubscribe();
        claim.release();
      };
    });
  }

  /** @internal A claim gave its slot back. */
  _giveBack(): void {
    this.running--;
    this.grant();
  }

  private grant(): void {
    if (this.granting) return;
    this.granting = true;
    try {
      while (this.running < this.size && this.line.length > 0) {
        const next = this.line.shift() as Claim;
        if (next.state !== 'waiting') continue;
        next.state = 'holding';
        this.running++;
        next.start(next);
      }
    } finally {
      this.granting = false;
    }
  }
}

/**
 * Runs the source in a slot of `pool`: the source is subscribed once a slot is free, and the slot
 * is given back when it completes, errors or is unsubscribed. See {@link SlotPool}.
 *
 * ```
 * pool = new SlotPool(1)
 * a.pipe(withSlot(pool)):  --a|
 * b.pipe(withSlot(pool)):  ---b|     (b = cold('-b|') waits for a's slot)
 * ```
 */
export function withSlot<T>(pool: SlotPool): MonoTypeOperatorFunction<T> {
  return (source) => pool.run(() => source);
}
