import { Line, LinePlace, PlaceState } from './internal/Line.js';

/**
 * A handle on one place in an {@link OrderedLine}, returned by `push` and kept by the caller until
 * its work answers. It stays valid however the ring behind the line grows or shrinks, and after
 * the place has left (when settling or trashing it is a harmless no-op).
 *
 * Only the line that issued a place can change it; the two fields are for looking.
 *
 * @group What the operators take and give
 */
export interface Place<T> {
  /** Where the place stands; see {@link PlaceState}. */
  readonly state: PlaceState;
  /**
   * The value the place currently holds: the one it was pushed with, or its replacement once
   * settled. `undefined` once trashed or once it has left, so a handle kept after the fact does not keep
   * the value alive.
   */
  readonly value: T | undefined;
}

// The ring stores these objects rather than values: a resize copies references, so the handle a
// caller holds is the very object in the line, wherever the ring has moved it.
class OrderedPlace<T> implements Place<T>, LinePlace<T> {
  constructor(
    readonly owner: OrderedLine<T>,
    public state: PlaceState,
    public value: T | undefined,
  ) {}
}

/**
 * A line that values join in arrival order and leave in arrival order, though each one is
 * settled (its work answered) whenever that work happens to finish.
 *
 * Work that runs concurrently finishes in any order, but what consumes its answers often must not
 * see them in that order: a create that lands after the delete that superseded it is a correctly
 * locked wrong answer, and nothing downstream can undo it. So every value takes a place at the
 * back when it arrives, and `flush` hands on only the contiguous settled head: a value goes when
 * its own work has answered and everything that arrived before it has gone.
 *
 * - Work that needs no answer still takes a place (`push(value, true)`), so it cannot overtake an
 *   earlier value whose work is still running.
 * - A value that turns out to be worth nothing is trashed *in place*: it counts as settled but is
 *   skipped on the way out. Removing it early would let whatever is behind it leave before what is
 *   ahead of it.
 * - The cost is head-of-line blocking on delivery only: one unsettled place holds back everything
 *   behind it, but never the work behind it, which is already running.
 *
 * Backed by a {@link RingQueue} of places, so a deep line costs O(1) per push and per flush and a
 * burst does not leave it the size of its worst moment. The rule is the kit's one line rule, shared
 * with `releaseInOrder`, so the two cannot differ. A value leaves the line with its place:
 * neither the ring cell nor the handle keeps it alive afterwards.
 *
 * Not thread-safe by design: one owner pushes, settles and flushes, as an operator's closure does.
 *
 * @example An update whose read is still running holds back the delete behind it
 * ```ts
 * const line = new OrderedLine<string>();
 * const update = line.push('instance-updated'); // its read is still running
 * line.push('instance-deleted', true); // needs no read: settled at once
 * line.flush(); // []: the delete may not overtake the update
 * line.settle(update, 'instance-updated (read)');
 * line.flush(); // ['instance-updated (read)', 'instance-deleted']
 * ```
 *
 * @group Cores
 */
export class OrderedLine<T> {
  private readonly line = new Line<T, OrderedPlace<T>>();

  /** Places in the line: pending, settled or trashed, not yet gone. */
  get length(): number {
    return this.line.length;
  }

  /** Cells allocated by the ring behind the line (for memory accounting and tests). */
  get capacity(): number {
    return this.line.capacity;
  }

  /**
   * Takes a place at the back of the line for `value` and returns its handle.
   *
   * @param value What the place holds until it is settled with a replacement.
   * @param settled Whether it is settled already (work that needs no answer): it then leaves as
   * soon as everything ahead of it has.
   */
  push(value: T, settled = false): Place<T> {
    const held = new OrderedPlace<T>(this, settled ? 'settled' : 'pending', value);
    this.line.push(held);
    return held;
  }

  /**
   * Settles a pending place, so it can leave once everything ahead of it has.
   *
   * With a replacement the place leaves with that value instead of the one it was pushed with (a
   * derived value, not merged). The replacement is told apart by the argument's presence, not its
   * value, so `settle(place, undefined)` replaces and `settle(place)` keeps.
   *
   * The first settlement wins: settling a place that is already settled, trashed or gone
   * changes nothing and returns `false`, so late or duplicate answers are harmless.
   *
   * Nothing leaves until `flush` is called.
   *
   * @param place A handle returned by this line's `push`.
   * @param replacement The value to leave with instead.
   * @returns Whether this call settled the place.
   * @throws TypeError if the place was issued by another line.
   */
  settle(place: Place<T>, ...replacement: [] | [T]): boolean {
    const held = this.own(place);
    if (held.state !== 'pending') return false;
    held.state = 'settled';
    if (replacement.length > 0) held.value = replacement[0];
    return true;
  }

  /**
   * Trashes a place in the line: it counts as settled but is skipped on the way out, and keeps its
   * place until it reaches the front, so trashing never lets anything behind it leave before
   * everything ahead of it has left.
   *
   * A place that is settled but still waiting can be trashed too (a decision to drop it may come
   * after its answer did). Trashing a place that is already trashed or gone changes nothing
   * and returns `false`. The value is let go at once.
   *
   * @param place A handle returned by this line's `push`.
   * @returns Whether this call trashed the place.
   * @throws TypeError if the place was issued by another line.
   */
  trash(place: Place<T>): boolean {
    const held = this.own(place);
    if (held.state === 'trashed' || held.state === 'left') return false;
    held.state = 'trashed';
    held.value = undefined;
    return true;
  }

  /**
   * Flushes the line's settled head: removes it and returns its values in arrival order,
   * leaving out trashed places; stops at the first pending place (a line of settled places behind
   * one pending place flushes nothing).
   *
   * An array rather than a generator: the line is already consistent when the caller sees the
   * first value, so a caller that reacts to a value by pushing or settling (re-entrantly) cannot
   * find it half-flushed, and nothing depends on the caller iterating to the end.
   */
  flush(): T[] {
    const out: T[] = [];
    this.line.flush((value) => out.push(value));
    return out;
  }

  /**
   * Removes every place and returns the values in arrival order, settled or not, leaving out
   * trashed places. A pending place gives the value it currently holds, which is the value it was
   * pushed with (only settling replaces it). For shutting down: what has not been answered is
   * handed on as it arrived rather than lost.
   */
  drain(): T[] {
    const out: T[] = [];
    this.line.drain((value) => out.push(value));
    return out;
  }

  /** The place at the front of the line, or `undefined` when the line is empty. */
  peek(): Place<T> | undefined {
    return this.line.peek();
  }

  /** Iterates the places front to back without removing anything. */
  *[Symbol.iterator](): IterableIterator<Place<T>> {
    yield* this.line;
  }

  private own(place: Place<T>): OrderedPlace<T> {
    if (!(place instanceof OrderedPlace) || place.owner !== this) {
      throw new TypeError('OrderedLine: this place was not taken in this line');
    }
    return place as OrderedPlace<T>;
  }
}
