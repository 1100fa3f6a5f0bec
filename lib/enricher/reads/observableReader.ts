/**
 * The reader as the enricher uses it: every call an Observable, aborted by unsubscribing, timed
 * out on the enricher's scheduler, and counted.
 */
import { Observable, SchedulerLike, Subscription, finalize, tap, throwError, timeout } from 'rxjs';
import { UnsubscribedError, fromAbortable } from '@rxfleet/operators';
import { IncusApiError, IncusInstance, IncusInstanceState, IncusNetwork, IncusProject, IncusReader } from '../../incus/api';

/**
 * {@link IncusReader} with Observables instead of promises: each call reads when subscribed,
 * emits its answer once and completes, or errors; unsubscribing aborts it. A fake in specs can
 * answer in virtual time, which a promise never can.
 */
export interface ObservableIncusReader {
  instance$(project: string, name: string): Observable<IncusInstance>;
  instanceState$(project: string, name: string): Observable<IncusInstanceState>;
  network$(project: string, name: string): Observable<IncusNetwork>;
  project$(name: string): Observable<IncusProject>;
  projectNames$(): Observable<string[]>;
  networkNames$(project: string): Observable<string[]>;
  instanceNames$(project: string): Observable<string[]>;
}

/** Whether `reader` already speaks Observables. */
export function isObservableReader(reader: IncusReader | ObservableIncusReader): reader is ObservableIncusReader {
  return typeof (reader as ObservableIncusReader).instance$ === 'function';
}

/** The Observable face of a promise-based reader: each subscription is one call, unsubscribing aborts it. */
export function observableReader(reader: IncusReader | ObservableIncusReader): ObservableIncusReader {
  if (isObservableReader(reader)) return reader;
  return {
    instance$: (project, name) => fromAbortable((signal) => reader.getInstance(project, name, signal)),
    instanceState$: (project, name) => fromAbortable((signal) => reader.getInstanceState(project, name, signal)),
    network$: (project, name) => fromAbortable((signal) => reader.getNetwork(project, name, signal)),
    project$: (name) => fromAbortable((signal) => reader.getProject(name, signal)),
    projectNames$: () => fromAbortable((signal) => reader.listProjectNames(signal)),
    networkNames$: (project) => fromAbortable((signal) => reader.listNetworkNames(project, signal)),
    instanceNames$: (project) => fromAbortable((signal) => reader.listInstanceNames(project, signal)),
  };
}

/** What one call was, for counting. */
export type ReadKind = 'instance' | 'instance_state' | 'network' | 'project' | 'listing';

/** How one call ended. */
export type ReadOutcome = 'ok' | 'not_found' | 'error' | 'timeout' | 'aborted';

/** A call that took longer than the read timeout. */
export class ReadTimeoutError extends Error {
  constructor(
    readonly what: string,
    readonly ms: number,
  ) {
    super(`${what}: no answer within ${ms} ms`);
    this.name = 'ReadTimeoutError';
  }
}

/** Whether `error` is Incus saying the thing does not exist. */
export function isNotFound(error: unknown): boolean {
  return error instanceof IncusApiError ? error.notFound : (error as { status?: unknown } | null)?.status === 404;
}

/** Options for {@link timedReader}. */
export interface TimedReaderOptions {
  /** Ms one call may take. */
  readTimeout: number;
  scheduler: SchedulerLike;
  /** Told how every call ended and how long it took (ms on the scheduler's clock). */
  onRead?: (kind: ReadKind, outcome: ReadOutcome, ms: number) => void;
}

/**
 * Wraps every call of `reader` with the read timeout (the call is aborted and errors with a
 * {@link ReadTimeoutError}) and reports each outcome. "One instance read or one listing" takes at
 * most `readTimeout`: a server that does not answer fails that read, and the line behind it
 * moves on.
 *
 * A promise-based reader (the REST client) is timed where its calls are made: each call is one
 * Observable owning its `AbortController` and its timeout ({@link timedCall}), the same contract
 * as `fromAbortable` under `timeout`, `tap` and `finalize`, which cost four subscribers a call
 * and the enricher makes two calls an event. An Observable reader (a fake answering in virtual
 * time) is wrapped in those operators.
 */
export function timedReader(reader: IncusReader | ObservableIncusReader, options: TimedReaderOptions): ObservableIncusReader {
  if (isObservableReader(reader)) return timedObservableReader(reader, options);
  const call = <T>(kind: ReadKind, what: () => string, work: (signal: AbortSignal) => PromiseLike<T>): Observable<T> =>
    timedCall(kind, what, work, options);
  return {
    instance$: (p, n) =>
      call(
        'instance',
        () => `GET instance ${p}/${n}`,
        (signal) => reader.getInstance(p, n, signal),
      ),
    instanceState$: (p, n) =>
      call(
        'instance_state',
        () => `GET instance state ${p}/${n}`,
        (signal) => reader.getInstanceState(p, n, signal),
      ),
    network$: (p, n) =>
      call(
        'network',
        () => `GET network ${p}/${n}`,
        (signal) => reader.getNetwork(p, n, signal),
      ),
    project$: (n) =>
      call(
        'project',
        () => `GET project ${n}`,
        (signal) => reader.getProject(n, signal),
      ),
    projectNames$: () =>
      call(
        'listing',
        () => 'list projects',
        (signal) => reader.listProjectNames(signal),
      ),
    networkNames$: (p) =>
      call(
        'listing',
        () => `list networks of ${p}`,
        (signal) => reader.listNetworkNames(p, signal),
      ),
    instanceNames$: (p) =>
      call(
        'listing',
        () => `list instances of ${p}`,
        (signal) => reader.listInstanceNames(p, signal),
      ),
  };
}

/**
 * One call of a promise-based reader as an Observable, timed and counted: what
 * `fromAbortable(work).pipe(timeout(...), tap(...), finalize(...))` does, in one subscriber.
 *
 * - `work` is called at subscription with a signal of its own; a resolved value is emitted once
 *   and the Observable completes; a rejection (or a throw) errors it, counted `not_found` when
 *   Incus says the thing does not exist, else `error`.
 * - No answer within `readTimeout` (on `scheduler`): the signal is aborted (reason
 *   `UnsubscribedError`, as `fromAbortable` does when `timeout` drops it) and the Observable
 *   errors with a {@link ReadTimeoutError} naming `what()`, counted `timeout`.
 * - Unsubscribing before the answer aborts the signal the same way, counted `aborted`; a late
 *   settlement is ignored.
 * - `onRead` is told once, after the Observable has ended and the call is aborted if it had to
 *   be, with the outcome and the ms from subscription on the scheduler's clock.
 */
export function timedCall<T>(
  kind: ReadKind,
  what: () => string,
  work: (signal: AbortSignal) => PromiseLike<T>,
  options: TimedReaderOptions,
): Observable<T> {
  const { readTimeout, scheduler, onRead } = options;
  return new Observable<T>((subscriber) => {
    const started = scheduler.now();
    const controller = new AbortController();
    let outcome: ReadOutcome = 'aborted';
    // Answered, failed or timed out: nothing more to abort, and a late settlement is ignored.
    let over = false;
    const timer: Subscription = scheduler.schedule(() => {
      if (over) return;
      over = true;
      controller.abort(new UnsubscribedError());
      outcome = 'timeout';
      subscriber.error(new ReadTimeoutError(what(), readTimeout));
    }, readTimeout);
    const failed = (error: unknown): void => {
      if (over) return;
      over = true;
      timer.unsubscribe();
      outcome = isNotFound(error) ? 'not_found' : 'error';
      subscriber.error(error);
    };
    subscriber.add(() => {
      timer.unsubscribe();
      if (!over) {
        over = true;
        controller.abort(new UnsubscribedError());
      }
      onRead?.(kind, outcome, scheduler.now() - started);
    });
    let pending: PromiseLike<T>;
    try {
      pending = work(controller.signal);
    } catch (error) {
      failed(error);
      return;
    }
    Promise.resolve(pending).then((value) => {
      if (over) return;
      over = true;
      timer.unsubscribe();
      outcome = 'ok';
      subscriber.next(value);
      subscriber.complete();
    }, failed);
  });
}

// An Observable reader's calls (a fake in virtual time), each wrapped in rxjs's own operators.
function timedObservableReader(reader: ObservableIncusReader, options: TimedReaderOptions): ObservableIncusReader {
  const { readTimeout, scheduler, onRead } = options;
  const timed = <T>(kind: ReadKind, what: string, call: () => Observable<T>): Observable<T> =>
    new Observable<T>((subscriber) => {
      const started = scheduler.now();
      let outcome: ReadOutcome = 'aborted';
      const subscription = call()
        .pipe(
          timeout({ first: readTimeout, scheduler, with: () => throwError(() => new ReadTimeoutError(what, readTimeout)) }),
          tap({
            next: () => (outcome = 'ok'),
            error: (error: unknown) =>
              (outcome = error instanceof ReadTimeoutError ? 'timeout' : isNotFound(error) ? 'not_found' : 'error'),
          }),
          finalize(() => onRead?.(kind, outcome, scheduler.now() - started)),
        )
        .subscribe(subscriber);
      return subscription;
    });
  return {
    instance$: (p, n) => timed('instance', `GET instance ${p}/${n}`, () => reader.instance$(p, n)),
    instanceState$: (p, n) => timed('instance_state', `GET instance state ${p}/${n}`, () => reader.instanceState$(p, n)),
    network$: (p, n) => timed('network', `GET network ${p}/${n}`, () => reader.network$(p, n)),
    project$: (n) => timed('project', `GET project ${n}`, () => reader.project$(n)),
    projectNames$: () => timed('listing', 'list projects', () => reader.projectNames$()),
    networkNames$: (p) => timed('listing', `list networks of ${p}`, () => reader.networkNames$(p)),
    instanceNames$: (p) => timed('listing', `list instances of ${p}`, () => reader.instanceNames$(p)),
  };
}
