import { Observable, ObservableInput, OperatorFunction, SchedulerLike, Subscription, asyncScheduler, from } from 'rxjs';
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

/** Options for {@link workerPool}. */
export interface WorkerPoolConfig<T, R> {
  /** Most units of work running at once (at least 1). */
  concurrency: number;
  /**
   * The work for one ticket, as an Observable factory: its first value is the outcome, and it is
   * unsubscribed then. An error becomes a `failed` outcome; completing silently is a failure too.
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
 * for a worker sit in a ring rather than `mergeMap`'s shifting array (50,000 waiting tickets cost
 * nothing per dequeue); a ticket is asked whether it is still current when a worker reaches it,
 * not when it arrived, so a reset empties the queue without touching it; and the outcome decides
 * when the key is free again: at once after a failure, or after a delay while a node restarts,
 * so the next discovery round does not catch it halfway.
 *
 * ```
 * concurrency = 1, work(x) = cold('--d|'), work(y) = cold('-f|') where f = failed
 * source: xy---------|
 * result: --X-Y------|     X = { x, done }, Y = { y, failed }
 * ```
 *
 * Semantics:
 * - Results are emitted as work ends, in completion order; a stale ticket emits `skipped` when
 *   a worker reaches it, without running its work.
 * - `done` with `releaseAfter` releases the key that many milliseconds later on `scheduler`;
 *   otherwise the key is released as the result is emitted.
 * - Completes when the source has completed, nothing waits and nothing runs; pending delayed
 *   releases do not hold completion back.
 * - A source error errors the output at once.
 * - Teardown (unsubscribe, completion or error) unsubscribes running work and releases every
 *   ticket the pool still holds: running, waiting, or waiting out a delayed release. No timer or
 *   inner subscription survives it.
 *
 * @param config `concurrency`, `work`, `onBusy`, `scheduler`.
 */
export function workerPool<T extends PoolTicket, R>(config: WorkerPoolConfig<T, R>): OperatorFunction<T, PoolResult<T, R>> {
  const { concurrency, work, onBusy, scheduler = asyncScheduler } = config;
  if (!(concurrency >= 1)) throw new RangeError(`concurrency must be >= 1, got ${concurrency}`);
  return (source) =>
    new Observable<PoolResult<T, R>>((subscriber) => {
      const waiting = new RingQueue<T>();
      const running = new Map<T, Subscription>();
      const delayed = new Map<T, Subscription>();
      let sourceDone = false;
      let pulling = false;

      const finishIfIdle = (): void => {
        if (sourceDone && running.size === 0 && waiting.length === 0) subscriber.complete();
      };

      const release = (ticket: T, outcome: Outcome<R>): void => {
        const after = outcome.status === 'done' ? outcome.releaseAfter : undefined;
        if (after === undefined || after <= 0) {
          ticket.release();
          return;
        }
        ticket.hold?.();
        const timer = scheduler.schedule(() => {
          delayed.delete(ticket);
          ticket.release();
        }, after);
        delayed.set(ticket, timer);
      };

      // Work that answers synchronously ends inside begin(); the flag keeps that from recursing
      // once per waiting ticket (a deep queue would overflow the stack) and lets this loop go on.
      const pullNext = (): void => {
        if (pulling) return;
        pulling = true;
        try {
          while (running.size < concurrency && waiting.length > 0) begin(waiting.shift() as T);
        } finally {
          pulling = false;
        }
      };

      const end = (ticket: T, outcome: Outcome<R>): void => {
        const inner = running.get(ticket);
        if (inner === undefined) return;
        running.delete(ticket);
        inner.unsubscribe();
        onBusy?.(running.size);
        release(ticket, outcome);
        subscriber.next({ ticket, outcome });
        pullNext();
        finishIfIdle();
      };

      const begin = (ticket: T): void => {
        if (!ticket.start()) {
          subscriber.next({ ticket, outcome: { status: 'skipped' } });
          return;
        }
        // Registered before subscribing, so work that answers synchronously finds its slot.
        const inner = new Subscription();
        running.set(ticket, inner);
        onBusy?.(running.size);
        let answered = false;
        let input: ObservableInput<Outcome<R>>;
        try {
          input = work(ticket);
        } catch (error) {
          end(ticket, failed(error));
          return;
        }
        inner.add(
          from(input).subscribe({
            next: (outcome) => {
              answered = true;
              end(ticket, outcome);
            },
            error: (error: unknown) => end(ticket, failed(error)),
            complete: () => {
              if (!answered) end(ticket, failed(new Error('work completed without an outcome')));
            },
          }),
        );
      };

      subscriber.add(
        source.subscribe({
          next: (ticket) => {
            if (running.size < concurrency) begin(ticket);
            else waiting.push(ticket);
          },
          error: (error: unknown) => subscriber.error(error),
          complete: () => {
            sourceDone = true;
            finishIfIdle();
          },
        }),
      );

      return () => {
        const busyBefore = running.size;
        for (const [ticket, inner] of running) {
          inner.unsubscribe();
          ticket.release();
        }
        running.clear();
        for (const [ticket, timer] of delayed) {
          timer.unsubscribe();
          ticket.release();
        }
        delayed.clear();
        for (let ticket = waiting.shift(); ticket !== undefined; ticket = waiting.shift()) ticket.release();
        if (busyBefore > 0) onBusy?.(0);
      };
    });
}
