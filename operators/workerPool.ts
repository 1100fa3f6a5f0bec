import { Observable, ObservableInput, OperatorFunction, SchedulerLike, Subscriber, Subscription, UnsubscriptionError, asyncScheduler } from 'rxjs';
import { NoOutcomeError } from './errors';
import { OperatorSubscriber, subscribeInner, subscribeWith } from './internal/OperatorSubscriber';
import { RingQueue } from './RingQueue';

/** What the pool needs of a ticket: the {@link Ticket} of an {@link AdmissionLedger} fits. */
export interface PoolTicket {
  /** Called when a worker picks the ticket up; `false` means it went stale and must be skipped. */
  start(): boolean;
  /** Frees the ticket's key. */
  release(): void;
  /** Told that the work is done and the key will be released later (`releaseAfter`). */
  hold?(): void;
}

/** The work finished; release the key now, or `releaseAfter` milliseconds from now. */
export interface Done<R> {
  readonly status: 'done';
  readonly value: R;
  readonly releaseAfter?: number;
}

/** The work failed; the key is released now so the next sighting can try again. */
export interface Failed {
  readonly status: 'failed';
  readonly error: unknown;
}

/** The ticket was stale when a worker reached it: its work never ran. */
export interface Skipped {
  readonly status: 'skipped';
}

/** How one unit of work ended. */
export type Outcome<R> = Done<R> | Failed;

/** One ticket's result, emitted when its work ends (or when it is skipped). */
export interface PoolResult<T, R> {
  readonly ticket: T;
  readonly outcome: Outcome<R> | Skipped;
}

/** Builds a {@link Done} outcome. */
export function done<R>(value: R, options: { releaseAfter?: number } = {}): Done<R> {
  return options.releaseAfter === undefined ? { status: 'done', value } : { status: 'done', value, releaseAfter: options.releaseAfter };
}

/** Builds a {@link Failed} outcome. */
export function failed(error: unknown): Failed {
  return { status: 'failed', error };
}

const SKIPPED: Skipped = Object.freeze({ status: 'skipped' });

/** Options for {@link workerPool}. */
export interface WorkerPoolConfig<T, R> {
  /** Most units of work running at once (at least 1). */
  concurrency: number;
  /**
   * The work for one ticket, as an Observable factory: its first value is the outcome, and it is
   * unsubscribed then. An error becomes a `failed` outcome, and so does a factory that throws;
   * completing without an outcome is a failure too ({@link NoOutcomeError}).
   */
  work: (ticket: T) => ObservableInput<Outcome<R>>;
  /** Told the number of busy workers after every change (for a gauge). */
  onBusy?: (busy: number) => void;
  /** Runs delayed releases. Defaults to `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/**
 * Runs the work of each ticket with at most `concurrency` units at once, skips tickets that went
 * stale while they waited, and releases each ticket's key according to how its work ended.
 *
 * A bounded `mergeMap` in spirit, with three differences that matter to a fleet: tickets waiting
 * for a worker sit in a ring rather than `mergeMap`'s shifting array (a million waiting tickets
 * cost nothing per dequeue); a ticket is asked whether it is still current when a worker reaches
 * it, not when it arrived, so a reset empties the queue without touching it; and the outcome
 * decides when the key is free again: at once after a failure, or after a delay while a node
 * restarts, so the next discovery round does not catch it halfway.
 *
 * ```
 * concurrency = 1, work(x) = cold('--d|'), work(y) = cold('-f|') where f = failed
 * source: xy---------|
 * result: --XY-------|     X = { x, done }, Y = { y, failed }
 * ```
 * (y waits for the one worker; x's work ends at 2, y's starts then and fails a frame later)
 *
 * Semantics:
 * - First come, first served: tickets start in the order they arrived, also when one arrives from
 *   inside an emission of this pool (a feedback loop): a newcomer joins the back of the queue and
 *   never takes the worker just freed ahead of tickets already waiting. A synchronous feedback
 *   loop (work that answers at once, each result feeding the next ticket) runs flat, not a stack
 *   frame deeper per ticket.
 * - Work that answers synchronously (`of(done(x))`, `[done(x)]`) ends before the next ticket is
 *   looked at; of an array or any input with several values, the first is the outcome.
 * - Results are emitted as work ends, in completion order; a stale ticket (`start()` returns
 *   `false`) emits `skipped` when a worker reaches it, without running its work, and is not
 *   released.
 * - `done` with `releaseAfter` tells the ticket `hold()`, then releases it that many milliseconds
 *   later on `scheduler`; any other outcome releases it as the result is emitted. Every ticket
 *   the pool started or still holds is released exactly once.
 * - A unit of work's error, and a `work` factory that throws, are a `failed` outcome, never an
 *   error of the pool: the work failing is what the outcome is for.
 * - A callback that throws (`onBusy`, or a ticket's `start`, `hold` or `release`) errors the
 *   output, as a throwing `project` errors `mergeMap`'s.
 * - Completes when the source has completed, nothing waits and nothing runs; pending delayed
 *   releases do not hold completion back (teardown releases them).
 * - A source error errors the output at once.
 * - Teardown (unsubscribe, completion or error) unsubscribes the source and running work, cancels
 *   delayed releases and releases every ticket the pool still holds: running, waiting, or waiting
 *   out a delayed release; `onBusy` is told 0 if any worker was busy. No timer or inner
 *   subscription survives it. A `release` or `onBusy` that throws then does not stop the other
 *   releases; the errors are thrown from `unsubscribe` as an `UnsubscriptionError`, as rxjs does
 *   with a throwing finalizer.
 *
 * @example Provision each admitted node with 16 workers, keeping its key a minute after success
 * ```ts
 * tickets$.pipe(
 *   workerPool({
 *     concurrency: 16,
 *     work: (ticket) => fromAbortable((signal) => provision(ticket.value, signal)).pipe(
 *       map((restarted) => done(restarted, { releaseAfter: restarted ? 60_000 : 0 })),
 *     ),
 *     onBusy: (n) => busyWorkers.set(n),
 *   }),
 * );
 * ```
 *
 * @param config `concurrency`, `work`, `onBusy`, `scheduler`.
 * @return A function that returns an Observable of one {@link PoolResult} per ticket.
 */
export function workerPool<T extends PoolTicket, R>(config: WorkerPoolConfig<T, R>): OperatorFunction<T, PoolResult<T, R>> {
  const { concurrency } = config;
  if (!(concurrency >= 1)) throw new RangeError(`concurrency must be >= 1, got ${concurrency}`);
  return (source) =>
    new Observable<PoolResult<T, R>>((subscriber) => {
      const pool = new Pool<T, R>(subscriber, config);
      subscribeWith(subscriber, subscriber, source, {
        next: (ticket) => pool.accept(ticket),
        complete: () => pool.sourceCompleted(),
      });
      return () => pool.teardown();
    });
}

/**
 * One subscription's pool. A class rather than closures because every ticket's work refers back
 * to it: its unit of work ({@link Job}) then costs one object, not a set of closures.
 */
class Pool<T extends PoolTicket, R> {
  private readonly waiting = new RingQueue<T>();
  // Running work as an intrusive list: O(1) to add and remove, and teardown can walk it.
  private first: Job<T, R> | undefined;
  private busy = 0;
  private readonly delayed = new Set<Job<T, R>>();
  // The ticket whose `start()` is being called: if that throws, teardown still releases it.
  private starting: T | undefined;
  private sourceDone = false;
  private pulling = false;
  private closed = false;
  private readonly concurrency: number;
  private readonly work: (ticket: T) => ObservableInput<Outcome<R>>;
  private readonly onBusy: ((busy: number) => void) | undefined;
  private readonly scheduler: SchedulerLike;

  constructor(
    readonly output: Subscriber<PoolResult<T, R>>,
    config: WorkerPoolConfig<T, R>,
  ) {
    this.concurrency = config.concurrency;
    this.work = config.work;
    this.onBusy = config.onBusy;
    this.scheduler = config.scheduler ?? asyncScheduler;
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

  end(job: Job<T, R>, outcome: Outcome<R>): void {
    if (job.ended) return;
    job.ended = true;
    this.unlink(job);
    job.unsubscribe();
    this.onBusy?.(this.busy);
    const ticket = job.ticket;
    const after = outcome.status === 'done' ? outcome.releaseAfter : undefined;
    if (after !== undefined && after > 0) {
      // Registered before `hold()` is called: if it throws, teardown still releases the ticket.
      this.delayed.add(job);
      job.timer = this.scheduler.schedule(() => {
        this.delayed.delete(job);
        // A timer runs outside every subscriber's guard: a throwing release is routed here by hand.
        try {
          ticket.release();
        } catch (error) {
          this.output.error(error);
        }
      }, after);
      ticket.hold?.();
    } else {
      ticket.release();
    }
    this.output.next({ ticket, outcome });
    this.pullNext();
    this.finishIfIdle();
  }

  teardown(): void {
    this.closed = true;
    const errors: unknown[] = [];
    const release = (ticket: PoolTicket): void => {
      try {
        ticket.release();
      } catch (error) {
        errors.push(error);
      }
    };
    const busyBefore = this.busy;
    for (let job = this.first; job !== undefined; job = job.after) {
      job.ended = true;
      job.unsubscribe();
      release(job.ticket);
    }
    this.first = undefined;
    this.busy = 0;
    for (const job of this.delayed) {
      job.timer?.unsubscribe();
      release(job.ticket);
    }
    this.delayed.clear();
    if (this.starting !== undefined) release(this.starting);
    this.starting = undefined;
    for (let ticket = this.waiting.shift(); ticket !== undefined; ticket = this.waiting.shift()) release(ticket);
    if (busyBefore > 0 && this.onBusy !== undefined) {
      try {
        this.onBusy(0);
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new UnsubscriptionError(errors);
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
    this.onBusy?.(this.busy);
    let input: ObservableInput<Outcome<R>>;
    try {
      input = this.work(ticket);
    } catch (error) {
      this.end(job, failed(error));
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

  private finishIfIdle(): void {
    if (this.sourceDone && this.busy === 0 && this.waiting.length === 0) this.output.complete();
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
  timer: Subscription | undefined = undefined;

  constructor(
    private readonly pool: Pool<T, R>,
    readonly ticket: T,
  ) {
    super(pool.output);
  }

  protected onNext(outcome: Outcome<R>): void {
    this.pool.end(this, outcome);
  }

  protected override onError(error: unknown): void {
    this.pool.end(this, failed(error));
  }

  protected override onComplete(): void {
    this.pool.end(this, failed(new NoOutcomeError()));
  }
}
