/**
 * What the owner hands the ordered line for each event: the event as it arrived, and the answer
 * it will leave with once its read has landed.
 */
import { Settling } from '@rxfleet/operators';
import { EnrichedEvent } from '../model/event';

/** What an event leaves the line with. */
export interface Answer {
  readonly event: EnrichedEvent;
  /**
   * Where the enricher's count of events stood when the read that answered it started: an answer
   * whose read started before that of one already released about the same instance is older than
   * it, and goes nowhere (DECISIONS E10). Absent when no read of the instance answered it.
   */
  readonly readAt?: number;
  /** The instance is not served (the instance filter): it leaves bare, once, if it was. */
  readonly unserved?: true;
  /** The event goes nowhere: its project is not served (E6). */
  readonly unservedProject?: true;
}

/**
 * One event's place in the line, from the owner's side: the line asks to be told
 * (`whenSettled`), the owner answers (`settle`), whichever comes first. The first answer wins.
 */
export class LineEntry implements Settling<Answer> {
  private answer: Answer | undefined;
  private tell: ((answer: Answer) => void) | undefined;

  constructor(
    /** The event as it arrived: what the line hands on if it is drained before the answer. */
    readonly event: EnrichedEvent,
  ) {}

  /** An entry that is answered already: it leaves once everything ahead of it has. */
  static answered(answer: Answer): LineEntry {
    const entry = new LineEntry(answer.event);
    entry.answer = answer;
    return entry;
  }

  /** Whether it has been answered. */
  get settled(): boolean {
    return this.answer !== undefined;
  }

  /**
   * @internal The line's side (`releaseInOrder` without a `settle` function, which takes an entry
   * as a `Settling` value): told the answer now if there is one, else when it comes.
   */
  whenSettled(tell: (answer: Answer) => void): void {
    if (this.answer !== undefined) tell(this.answer);
    else this.tell = tell;
  }

  /** Answers the place; a second answer changes nothing. */
  settle(answer: Answer): void {
    if (this.answer !== undefined) return;
    this.answer = answer;
    const tell = this.tell;
    this.tell = undefined;
    tell?.(answer);
  }
}
