/**
 * A first-in first-out queue on a ring buffer that doubles when full and halves when a quarter
 * full, never below two cells.
 *
 * Why not an array with `shift()`: `Array.prototype.shift` moves every remaining element, so a
 * queue that is tens of thousands deep pays for its depth on every dequeue (this is what makes
 * `mergeMap`'s internal buffer degrade). Here `push` and `shift` are O(1) amortised, the backing
 * array is reused rather than abandoned and reallocated as the front moves, and a burst does not
 * leave the queue at the size of its worst moment for ever.
 *
 * Guarantees:
 * - `shift` returns values in exactly the order `push` took them.
 * - A cell is cleared as soon as its value leaves, so the queue never keeps a dequeued value alive.
 * - Capacity is 0 until the first push, then 2, 4, 8, ... while growing; after a shift that leaves
 *   the queue at most a quarter full it halves (never below 2), so a just-shrunk ring is about
 *   half full and does not immediately grow again.
 *
 * Not thread-safe by design: one owner pushes and shifts, as every RxJS operator's closure does.
 *
 * @example
 * ```ts
 * const queue = new RingQueue<string>();
 * queue.push('a');
 * queue.push('b');
 * queue.shift(); // 'a'
 * queue.length; // 1
 * ```
 *
 * @group Cores
 */
export class RingQueue<T> {
  private cells: (T | undefined)[] = [];
  private head = 0;
  private tail = 0;
  private count = 0;

  /** Number of values waiting. */
  get length(): number {
    return this.count;
  }

  /** Number of cells currently allocated (for memory accounting and tests). */
  get capacity(): number {
    return this.cells.length;
  }

  /** Appends `value` at the back, growing the ring if it is full. */
  push(value: T): void {
    if (this.count === this.cells.length) this.resize(Math.max(this.cells.length * 2, 2));
    this.cells[this.tail] = value;
    // The capacity is always a power of two, so wrapping is a mask rather than a division.
    this.tail = (this.tail + 1) & (this.cells.length - 1);
    this.count++;
  }

  /** Removes and returns the front value, or `undefined` when empty. */
  shift(): T | undefined {
    if (this.count === 0) return undefined;
    const value = this.cells[this.head];
    this.cells[this.head] = undefined;
    this.head = (this.head + 1) & (this.cells.length - 1);
    this.count--;
    const half = this.cells.length >> 1;
    if (half >= 2 && this.count <= half >> 1) this.resize(half);
    return value;
  }

  /** The front value without removing it, or `undefined` when empty. */
  peek(): T | undefined {
    return this.count === 0 ? undefined : this.cells[this.head];
  }

  /** The value `index` places behind the front (0 is the front), or `undefined` past the back. */
  at(index: number): T | undefined {
    if (index < 0 || index >= this.count) return undefined;
    return this.cells[(this.head + index) & (this.cells.length - 1)];
  }

  /** Drops every value and lets the backing array go. */
  clear(): void {
    this.cells = [];
    this.head = this.tail = this.count = 0;
  }

  /** Iterates front to back without removing anything. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = 0; i < this.count; i++) yield this.cells[(this.head + i) & (this.cells.length - 1)] as T;
  }

  private resize(size: number): void {
    const next = new Array<T | undefined>(size);
    const mask = this.cells.length - 1;
    for (let i = 0; i < this.count; i++) next[i] = this.cells[(this.head + i) & mask];
    this.cells = next;
    this.head = 0;
    this.tail = this.count & (size - 1);
  }
}
