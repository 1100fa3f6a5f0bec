import { Subscriber } from 'rxjs';
import { Line, LinePlace } from './Line.js';

/**
 * One subscription of `releaseInOrder`: its line, and the one loop that hands the line's head to
 * the output. The operator's two forms differ only in how a value's answer arrives (a
 * subscription, a callback) and so in what a place is; when a place settles they call `settled`,
 * and everything about order, completion and drain is decided here.
 *
 * Why the loop emits straight from the line, one value at a time, with no array and no outbox:
 * the line is the order. A consumer that feeds the source from inside an emission adds places at
 * the back; one that settles at once is let out by the loop already running (which looks at the
 * front again after every emission), so nothing overtakes anything and a synchronous feedback
 * loop runs flat, not a stack frame deeper per value.
 */
export class LineOutput<V, P extends LinePlace<V>> {
  readonly line = new Line<V, P>();
  /** Set once `drain` has run: arrivals and answers from then on are ignored. */
  drained = false;
  private sourceDone = false;
  private emitting = false;
  private readonly emit: (value: V) => void;

  constructor(readonly output: Subscriber<V>) {
    this.emit = (value) => output.next(value);
  }

  /** A place has just stopped being pending: only the front can let anything out. */
  settled(place: P): void {
    if (this.line.peek() === place) this.flush();
  }

  sourceCompleted(): void {
    this.sourceDone = true;
    if (!this.drained) this.completeIfDone();
  }

  /** Hands on the whole line in order (pending places as they hold) and completes. */
  drain(): void {
    this.drained = true;
    this.line.drain(this.emit);
    this.output.complete();
  }

  private flush(): void {
    // A re-entrant call (from inside an emission) leaves the work to the loop already running.
    if (this.emitting) return;
    this.emitting = true;
    try {
      this.line.flush(this.emit);
    } finally {
      this.emitting = false;
    }
    this.completeIfDone();
  }

  private completeIfDone(): void {
    if (this.sourceDone && !this.emitting && this.line.length === 0) this.output.complete();
  }
}
