/**
 * What the owner hands the ordered line for each event: the event as it arrived, and the answer
 * it will leave with once its read has landed.
 */
import { Observable } from 'rxjs';
import { EnrichedEvent } from './event';

/** What an event leaves the line with. */
export interface Answer {
  readonly event: EnrichedEvent;
  /**
   * Where the enricher's count of events stood when the read that answered it began: an answer
   * whose read began before that of one already released about the same instance is older than
   * it, and goes nowhere (DECISIONS E10). Absent when no read of the instance answered it.
   */
  readonly readAt?: number;
  /** The instance is not served (the instance filter): it leaves bare, once, if it was. */
  readonly unserved?: true;
  /** The event goes nowhere: its project is not served (E6). */
  readonly unservedProject?: true;
}

/**
 * One event's place in the line, from the owner's side: `answer$` is what the line waits on (its
 * one value settles the place), `settle` is how the owner answers it. The first settlement wins.
 *
 * A handle rather than a Subject: it is told once and tells the one subscriber the line makes,
 * whenever that subscriber came (the line subscribes as the entry arrives; an entry answered
 * already is told at once).
 */
export class LineEntry {
  private answer: Answer | undefined;
  private waiting: ((answer: Answer) => void) | undefined;

  /** What the place leaves with: one value, then complete. */
  readonly answer$: Observable<Answer> = new Observable<Answer>((subscriber) => {
    const tell = (answer: Answer): void => {
      subscriber.next(answer);
      subscriber.complete();
    };
    if (this.answer !== undefined) {
      tell(this.answer);
      return undefined;
    }
    this.waiting = tell;
    return () => {
      if (this.waiting === tell) this.waiting = undefined;
    };
  });

  constructor(
    /** The event as it arrived: what the line hands on if it is drained before the answer. */
    readonly event: EnrichedEvent,
  ) {}

  /** An entry that is answered already: it leaves once everything ahead of it has. */
  static answered(answer: Answer): LineEntry {
    const entry = new LineEntry(answer.event);
    entry.settle(answer);
    return entry;
  }

  /** Whether it has been answered. */
  get settled(): boolean {
    return this.answer !== undefined;
  }

  /** Answers the place; a second answer changes nothing. */
  settle(answer: Answer): void {
    if (this.answer !== undefined) return;
    this.answer = answer;
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.(answer);
  }
}
