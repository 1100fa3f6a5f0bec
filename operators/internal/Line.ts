import { RingQueue } from '../RingQueue.js';

/**
 * Where a place stands: `pending` until it settles, `settled` (with the value it will leave with)
 * or `trashed` (it will be skipped) while it waits for everything ahead of it, and `left` once it
 * has left the line.
 *
 * @group What the operators take and give
 */
export type PlaceState = 'pending' | 'settled' | 'trashed' | 'left';

/**
 * The type of {@link TRASH}, a class of its own that only the kit makes: an object literal keeps it
 * (`{ T: TRASH }` stays `{ T: Trash }`, where a `unique symbol` widens to `symbol`), and no answer
 * type matches it by accident.
 *
 * @group What the operators take and give
 */
export class Trash {
  /** What makes the type nominal: only an instance of this class has it, and only the kit makes one. */
  protected readonly brand = 'TRASH';

  /** Only the kit calls it, once, for `TRASH`: the class is exported as a type, not as a value. */
  constructor() {
    Object.freeze(this);
  }

  /** `TRASH`, for marble diagrams and logs. */
  toString(): string {
    return 'TRASH';
  }
}

/**
 * The answer that trashes a place in an ordered line: the value is skipped on the way out, but still
 * holds back everything that arrived after it until everything before it has left.
 *
 * @example A read that finds nothing new skips its event, in its place
 * ```ts
 * events$.pipe(releaseInOrder((e) => read(e).pipe(map((found) => (found.changed ? found : TRASH)))));
 * ```
 *
 * @group What the operators take and give
 */
export const TRASH: Trash = /* @__PURE__ */ new Trash();

/** What a {@link Line} reads and writes of the object that holds a place. */
export interface LinePlace<T> {
  state: PlaceState;
  value: T | undefined;
}

/**
 * Settles a pending place with an answer: `TRASH` trashes it (its value let go at once), anything
 * else replaces its value. The one way a place of an ordered-release operator settles, whichever
 * way its answer arrived.
 */
export function settlePlace<T>(place: LinePlace<T>, answer: T | Trash): void {
  if (answer === TRASH) {
    place.state = 'trashed';
    place.value = undefined;
  } else {
    place.state = 'settled';
    place.value = answer as T;
  }
}

/**
 * The ordered-release rule, once for the whole kit: places join at the back, and the front place
 * leaves as soon as it is no longer pending, a settled one with its value, a trashed one without.
 * `OrderedLine` and `releaseInOrder` both keep their places here, so the rule cannot drift apart
 * between them.
 *
 * Generic over the object that holds the place, so that an operator's per-value subscriber can be
 * its own place: one object per value, not a place and a subscriber that points at it. Every
 * place still in the line is reachable from it (a pending one included), so an operator tears its
 * pending work down by walking the line rather than keeping a second list.
 */
export class Line<T, P extends LinePlace<T> = LinePlace<T>> {
  private readonly ring = new RingQueue<P>();

  get length(): number {
    return this.ring.length;
  }

  get capacity(): number {
    return this.ring.capacity;
  }

  push(place: P): void {
    this.ring.push(place);
  }

  peek(): P | undefined {
    return this.ring.peek();
  }

  /** The place `index` behind the front, for walking the line without changing it. */
  at(index: number): P | undefined {
    return this.ring.at(index);
  }

  /**
   * Flushes the settled head: takes the front places out while they are not pending, handing each
   * settled one's value to `emit` (a trashed one leaves without), and stops at the first pending
   * place or an empty line. The front is looked at again after every `emit`, so a place that
   * settles from inside `emit` (a consumer feeding the source, whose work answers at once) leaves
   * in this same pass, in its turn; and a line cleared from inside `emit` (teardown) ends the pass.
   */
  flush(emit: (value: T) => void): void {
    for (let front = this.ring.peek(); front !== undefined && front.state !== 'pending'; front = this.ring.peek()) {
      this.ring.shift();
      const settled = front.state === 'settled';
      const value = front.value;
      leave(front);
      if (settled) emit(value as T);
    }
  }

  /** Takes every place out, front first, handing on the value of each one not trashed (pending as it holds). */
  drain(emit: (value: T) => void): void {
    for (let front = this.ring.shift(); front !== undefined; front = this.ring.shift()) {
      const kept = front.state !== 'trashed';
      const value = front.value;
      leave(front);
      if (kept) emit(value as T);
    }
  }

  /** Drops every place without handing anything on (teardown, once pending work is stopped). */
  clear(): void {
    this.ring.clear();
  }

  *[Symbol.iterator](): IterableIterator<P> {
    yield* this.ring;
  }
}

// A place's value goes with it: a handle kept after the fact (a caller's, an unsubscribed inner's)
// must not keep the value alive.
function leave<T>(place: LinePlace<T>): void {
  place.state = 'left';
  place.value = undefined;
}
