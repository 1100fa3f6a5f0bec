/**
 * The reader as the enricher uses it: every call an Observable, aborted by unsubscribing, timed
 * out on the enricher's scheduler, and counted.
 */
import { Observable, SchedulerLike, finalize, tap, throwError, timeout } from 'rxjs';
import { fromAbortable } from '@rxfleet/operators';
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
 */
export function timedReader(reader: ObservableIncusReader, options: TimedReaderOptions): ObservableIncusReader {
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
