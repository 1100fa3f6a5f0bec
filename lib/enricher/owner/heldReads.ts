/**
 * Instance reads that wait before they are asked for: held while the model is cold, parked while
 * their project's configuration is on its way.
 */
import { InstanceRead } from './requests';

/**
 * Reads not yet asked for, and why.
 *
 * Held: until the wires are known (the first round's networks, every pending project read), an
 * instance cannot be placed, so its reads are held per key, joined the way reads in flight are,
 * and released in arrival order when the model warms. Parked: a read whose event wants its
 * project's configuration, while that project's read is in flight, waits for it, so the event goes
 * out with its labels rather than without and then again.
 */
export class HeldReads {
  private readonly held = new Map<string, InstanceRead[]>();
  private readonly parked = new Map<string, InstanceRead[]>();

  /** Keys held until warm. */
  get heldKeys(): number {
    return this.held.size;
  }

  /**
   * Holds `read` until warm. An invented read (a repair, a fan-out) adds nothing to a key already
   * held for an event: the held read answers it, and while the server stays unreachable repairs
   * would otherwise pile up behind it.
   */
  hold(read: InstanceRead): void {
    const held = this.held.get(read.key);
    if (held === undefined) this.held.set(read.key, [read]);
    else if (read.entry !== undefined || held.every((other) => other.entry === undefined)) held.push(read);
  }

  /** Everything held, key by key in the order the keys were first held, strongest read first. */
  takeHeld(): InstanceRead[] {
    const held = [...this.held.values()];
    this.held.clear();
    // The strongest first, so the key's read is asked once rather than asked and superseded.
    return held.flatMap((reads) => [...reads].sort((a, b) => Number(b.waitForRunning) - Number(a.waitForRunning)));
  }

  /** Parks `read` until its project's read lands. */
  park(read: InstanceRead): void {
    const parked = this.parked.get(read.project);
    if (parked === undefined) this.parked.set(read.project, [read]);
    else parked.push(read);
  }

  /** The reads parked on `project`, in arrival order. */
  takeParked(project: string): InstanceRead[] {
    const parked = this.parked.get(project) ?? [];
    this.parked.delete(project);
    return parked;
  }

  /** Every read held or parked for `key` (in `project`), taken out. */
  takeKey(key: string, project: string): InstanceRead[] {
    const held = this.held.get(key) ?? [];
    this.held.delete(key);
    const parked = this.parked.get(project);
    if (parked === undefined) return held;
    const rest = parked.filter((read) => read.key !== key);
    if (rest.length > 0) this.parked.set(project, rest);
    else this.parked.delete(project);
    return [...held, ...parked.filter((read) => read.key === key)];
  }
}
