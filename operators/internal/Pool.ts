import { ObservableInput, SchedulerLike, Subscriber, Subscription, asyncScheduler } from 'rxjs';
import { NoOutcomeError } from '../errors.js';
import { Outcome, PoolResult, PoolTicket, Skipped, workFailed } from '../outcomes.js';
import { RingQueue } from '../RingQueue.js';
import { LONGEST_DELAY } from './checks.js';
import { OperatorSubscriber, subscribeInner } from './OperatorSubscriber.js';
import { TrackedOutput } from './TrackedOutput.js';

const SKIPPED: Skipped = Object.freeze({ status: 'skipped' });

/**
 * The tickets waiting out one `freeAfter`, in the order their work ended, and the one timer
 * armed for the first of them. Tickets held for the same delay fall due in the order they were
 * held, so a ring per delay and a timer for its head are exact.
 */
interface DelayLine<T extends PoolTicket, R> {
  readonly jobs: RingQueue<Job<T, R>>;
  timer: Subscription | undefined;
}

/** What a pool runs with: `workerPool`'s config (declared here, so the pool does not import the operator). */
interface PoolSettings<T, R> {
  readonly concurrency: number;
  readonly work: (ticket: T) => ObservableInput<Outcome<R>>;
  readonly onBusy?: (busy: number) => void;
  readonly scheduler?: SchedulerLike;
}

/**
 * One subscription of a {@link workerPool}: its queue, its running work and the keys it holds after their work.
 * A class rather than closures because every ticket's work refers back to it: a unit of work
 * ({@link Job}) then costs one object, not a set of closures.
 */
export class Pool<T extends PoolTicket, R> {
  private readonly waiting = new RingQueue<T>();
  // Running work as an intrusive list: O(1) to add and remove, and teardown can walk it.
  private first: Job<T, R> | undefined;
  private busy = 0;
  // Keys held after their work (`freeAfter`): one timer per distinct delay, not one per ticket (a thousand nodes a second
  // held for a minute would be sixty thousand timers). A line is dropped once empty, so many
  // distinct delays leave nothing behind.
  private readonly delayed = new Map<number, DelayLine<T, R>>();
  // The ticket whose `start()` is being called: if that throws, teardown still frees it.
  private starting: T | undefined;
  private sourceDone = false;
  private pulling = false;
  private closed = false;
  private readonly concurrency: number;
  private readonly work: (ticket: T) => ObservableInput<Outcome<R>>;
  // Dropped once it has thrown: the output has errored, and telling a broken gauge 0 at teardown
  // would only throw again, into whoever ended the output.
  private onBusy: ((busy: number) => void) | undefined;
  private readonly scheduler: SchedulerLike;
  /** Where the pool errors and completes: every throw inside it ends up here. */
  readonly ends: TrackedOutput;

  constructor(
    readonly output: Subscriber<PoolResult<T, R>>,
    config: PoolSettings<T, R>,
  ) {
    this.concurrency = config.concurrency;
    this.work = config.work;
    this.onBusy = config.onBusy;
    this.scheduler = config.scheduler ?? asyncScheduler;
    this.ends = new TrackedOutput(output);
  }

  // Always to the back of the queue, then pull. Taking a free worker directly would let a ticket fed
  // back from inside an emission overtake those already waiting, and would recurse once per ticket
  // in a synchronous feedback loop; the pull loop runs such a loop flat.
  accept(ticket: T): void {
    this.waiting.push(ticket);
    this.pullNext();
  }

  sourceCompleted(): void {
    this.sourceDone = true;
    this.finishIfIdle();
  }

  end(job: Job<T, R>, ended: Outcome<R>): void {
    if (job.ended) return;
    job.ended = true;
    this.unlink(job);
    job.unsubscribe();
    this.tellBusy(this.busy);
    const ticket = job.ticket;
    let outcome = ended;
    let after = outcome.status === 'done' ? outcome.freeAfter : undefined;
    if (after !== undefined && !(after >= 0 && after <= LONGEST_DELAY)) {
      // An outcome built by hand past `workDone`'s check: the work did not say when to free its
      // key, which is the work failing, not the pool.
      outcome = workFailed(new RangeError(`workerPool: an outcome's freeAfter must be from 0 to ${LONGEST_DELAY} ms, got ${after}`));
      after = undefined;
    }
    if (after !== undefined && after > 0) {
      // Registered before `hold()` is called: if it throws, teardown still frees the ticket.
      this.holdFor(job, after);
      ticket.hold?.();
    } else {
      ticket.free();
    }
    this.output.next({ ticket, outcome });
    this.pullNext();
    this.finishIfIdle();
  }

  // Every ticket still held is freed and a busy gauge told 0, whatever throws: a throw is handed
  // on once all is done (see TrackedOutput: out of `unsubscribe`, or to rxjs's unhandled path once
  // the output has ended by itself, never into whoever ended it).
  teardown(): void {
    this.closed = true;
    const errors: unknown[] = [];
    const free = (ticket: PoolTicket): void => {
      try {
        ticket.free();
      } catch (error) {
        errors.push(error);
      }
    };
    const busyBefore = this.busy;
    for (let job = this.first; job !== undefined; job = job.after) {
      job.ended = true;
      job.unsubscribe();
      free(job.ticket);
    }
    this.first = undefined;
    this.busy = 0;
    this.freeHeld(errors);
    if (this.starting !== undefined) free(this.starting);
    this.starting = undefined;
    for (let ticket = this.waiting.shift(); ticket !== undefined; ticket = this.waiting.shift()) free(ticket);
    if (busyBefore > 0) {
      try {
        this.tellBusy(0);
      } catch (error) {
        errors.push(error);
      }
    }
    this.ends.tearDown(errors);
  }

  /** Frees every key held after its work, now, collecting what the frees throw. */
  private freeHeld(errors: unknown[]): void {
    for (const line of this.delayed.values()) {
      line.timer?.unsubscribe();
      for (let job = line.jobs.shift(); job !== undefined; job = line.jobs.shift()) {
        try {
          job.ticket.free();
        } catch (error) {
          errors.push(error);
        }
      }
    }
    this.delayed.clear();
  }

  private tellBusy(busy: number): void {
    const onBusy = this.onBusy;
    if (onBusy === undefined) return;
    try {
      onBusy(busy);
    } catch (error) {
      this.onBusy = undefined;
      throw error;
    }
  }

  private holdFor(job: Job<T, R>, after: number): void {
    job.due = this.scheduler.now() + after;
    let line = this.delayed.get(after);
    if (line === undefined) {
      line = { jobs: new RingQueue<Job<T, R>>(), timer: undefined };
      this.delayed.set(after, line);
    }
    line.jobs.push(job);
    if (line.timer === undefined) this.arm(line, after);
  }

  private arm(line: DelayLine<T, R>, after: number): void {
    const head = line.jobs.peek() as Job<T, R>;
    line.timer = this.scheduler.schedule(() => this.fire(line, after), Math.max(0, head.due - this.scheduler.now()));
  }

  // Frees every ticket of the line that is due (a timer never fires early, but the clock it is
  // read by may lag it by a millisecond: one not yet due waits for a timer of its own). The timer
  // stays set while the loop runs, so a free that ends more work (a feedback loop) only queues.
  private fire(line: DelayLine<T, R>, after: number): void {
    const now = this.scheduler.now();
    for (let head = line.jobs.peek(); head !== undefined && head.due <= now; head = line.jobs.peek()) {
      line.jobs.shift();
      // A timer runs outside every subscriber's guard: a throwing free is routed here by hand
      // (and the teardown that follows frees the rest).
      try {
        head.ticket.free();
      } catch (error) {
        this.ends.error(error);
        return;
      }
    }
    line.timer?.unsubscribe();
    line.timer = undefined;
    if (line.jobs.length > 0) this.arm(line, after);
    else this.delayed.delete(after);
  }

  private begin(ticket: T): void {
    this.starting = ticket;
    const current = ticket.start();
    this.starting = undefined;
    if (!current) {
      this.output.next({ ticket, outcome: SKIPPED });
      return;
    }
    // Linked before anything of the user's runs, so that whatever throws, teardown finds the ticket;
    // and before subscribing, so that work answering synchronously finds its slot.
    const job = new Job<T, R>(this, ticket);
    this.link(job);
    this.tellBusy(this.busy);
    let input: ObservableInput<Outcome<R>>;
    try {
      input = this.work(ticket);
    } catch (error) {
      this.end(job, workFailed(error));
      return;
    }
    subscribeInner(input, job);
  }

  // Work that answers synchronously ends inside begin(); the flag keeps that from recursing once
  // per waiting ticket (a deep queue would overflow the stack) and lets this loop go on.
  private pullNext(): void {
    if (this.pulling) return;
    this.pulling = true;
    try {
      while (!this.closed && this.busy < this.concurrency && this.waiting.length > 0) this.begin(this.waiting.shift() as T);
    } finally {
      this.pulling = false;
    }
  }

  // Keys still held after their work do not hold completion back: they are freed as the pool
  // completes, before it does, so that a free that throws errors the output rather than coming
  // out of the teardown.
  private finishIfIdle(): void {
    if (this.closed || !this.sourceDone || this.busy !== 0 || this.waiting.length !== 0) return;
    const errors: unknown[] = [];
    this.freeHeld(errors);
    if (errors.length === 0) this.ends.complete();
    else this.ends.error(errors.length === 1 ? errors[0] : new AggregateError(errors, `${errors.length} tickets' free threw`));
  }

  private link(job: Job<T, R>): void {
    job.after = this.first;
    if (this.first !== undefined) this.first.before = job;
    this.first = job;
    this.busy++;
  }

  private unlink(job: Job<T, R>): void {
    if (job.before === undefined) this.first = job.after;
    else job.before.after = job.after;
    if (job.after !== undefined) job.after.before = job.before;
    job.before = job.after = undefined;
    this.busy--;
  }
}

/** One ticket's unit of work: the subscriber to its work, and its place in the pool's books. */
class Job<T extends PoolTicket, R> extends OperatorSubscriber<Outcome<R>> {
  before: Job<T, R> | undefined = undefined;
  after: Job<T, R> | undefined = undefined;
  ended = false;
  /** When its held key is freed, by the pool's scheduler. */
  due = 0;

  constructor(
    private readonly pool: Pool<T, R>,
    readonly ticket: T,
  ) {
    super(pool.ends);
  }

  protected onNext(outcome: Outcome<R>): void {
    this.pool.end(this, outcome);
  }

  protected override onError(error: unknown): void {
    this.pool.end(this, workFailed(error));
  }

  protected override onComplete(): void {
    this.pool.end(this, workFailed(new NoOutcomeError()));
  }
}
