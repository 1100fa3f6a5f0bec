/**
 * One instance read, the worker side: the instance, its state, and, when the event is worth
 * waiting for, its state again until it runs and has an address.
 */
import {
  Observable,
  ObservableInput,
  SchedulerLike,
  catchError,
  concatMap,
  defer,
  EMPTY,
  exhaustMap,
  map,
  of,
  race,
  switchMap,
  take,
  throwError,
  timer,
} from 'rxjs';
import { SlotPool } from '@rxfleet/operators';
import { IncusApiError, IncusInstance, IncusInstanceState } from '../../incus/api';
import { hasGlobalAddress, hasNic, isVmWithoutAgent } from '../model/distillInstance';
import { ObservableIncusReader } from './observableReader';

/** What a read found. */
export interface InstanceAnswer {
  readonly instance: IncusInstance;
  /** Its state; {@link UNREAD_STATE} when the instance is not served. */
  readonly state: IncusInstanceState;
  /** `false`: the instance filter does not serve it, and its state was not read. */
  readonly served?: false;
}

/** The state of an instance the filter does not serve: never read, never placed. */
export const UNREAD_STATE: IncusInstanceState = Object.freeze({ status: '', status_code: 0, network: null });

/** What a read is asked to wait for. */
export interface InstanceReadRequest {
  readonly project: string;
  readonly name: string;
  /** The event is a start: read once it runs and (with a NIC) has an address. */
  readonly waitForRunning: boolean;
  /** Somebody wants interfaces: a running instance without an address is worth waiting on. */
  readonly wantInterfaces: boolean;
}

/** Options for {@link readInstance}. */
export interface ReadInstanceOptions {
  /** Ms to keep polling for running and an address before answering with what there is. Default 10 s. */
  ipTimeout?: number;
  /** Ms between polls of the state. Default 150. */
  pollInterval?: number;
  scheduler: SchedulerLike;
  /**
   * The workers a wait for the address takes from: each poll and the instance read again take one,
   * the waits between them none, so an instance waiting for its address holds no worker. The first
   * instance and state calls run in whatever worker the caller holds for the read. Default: no limit.
   */
  slots?: SlotPool;
  /** Told once the first instance and state calls have answered (the caller gives its worker back). */
  onFirstAnswer?: () => void;
  /** Whether the instance is served: when it is not, its state is not read (`served: false`). */
  serves?: (instance: IncusInstance) => boolean;
}

const RUNNING = 103;
// Still on its way up: worth another poll. Anything else (Stopped, Error, Frozen) will not get
// an address by waiting.
const COMING_UP = new Set(['Running', 'Starting', 'Started']);

/**
 * Incus (6.0) answers an instance's state 500 (`Invalid PID`) while the instance stops, for a
 * moment in which its record still says Running (100-800 ms, longer on a busy machine). LXD (5.0)
 * does not: its state answers throughout a stop. Such an answer is a stop under way, not a failed read.
 */
class StopUnderWay extends Error {
  constructor(readonly answer: IncusApiError) {
    super(answer.message);
  }
}

const isStopUnderWay = (instance: IncusInstance, error: unknown): error is IncusApiError =>
  error instanceof IncusApiError && error.status === 500 && instance.status_code === RUNNING;

function settled(request: InstanceReadRequest, answer: InstanceAnswer): boolean {
  const { instance, state } = answer;
  const running = state.status_code === RUNNING;
  const addressed = !hasNic(instance) || hasGlobalAddress(state) || isVmWithoutAgent(instance, state);
  if (request.waitForRunning) return (running && addressed) || !COMING_UP.has(state.status);
  return !running || addressed;
}

function worthWaiting(request: InstanceReadRequest, answer: InstanceAnswer): boolean {
  if (request.waitForRunning) return !settled(request, answer);
  return request.wantInterfaces && answer.instance.status_code === RUNNING && !settled(request, answer);
}

/**
 * Reads `request`'s instance and state and emits one {@link InstanceAnswer}.
 *
 * - Without waiting it answers at once. It waits when the request is a start that is not yet
 *   running with an address (`waitForRunning`), or when interfaces are wanted and a running
 *   instance with a NIC reports no global address, IPv4 or IPv6 (a lease a moment late). A
 *   virtual machine without its agent is never waited on: it will not report an address.
 * - An instance `serves` refuses is answered at once with `served: false`, its state unread.
 * - With `slots`, each poll takes a worker and the waits between polls take none; `onFirstAnswer`
 *   says when the first calls are done, so the caller can give back the worker it read them in.
 * - Waiting polls the state every `pollInterval` ms (a poll never overlaps the previous one) and
 *   answers when the instance runs with an address, or stops coming up (a start), or leaves
 *   running (otherwise); the instance itself is read again if it was not running when first read.
 *   Poll errors are ignored. After `ipTimeout` it answers with the last state it saw: an event is
 *   never failed for a lease that is late, the key is simply read again soon.
 * - The first instance or state call failing errors the read, except a state call answered 500
 *   while the instance's record says Running (Incus while the instance stops, see
 *   {@link StopUnderWay}): then the instance and its state are read again every `pollInterval` ms,
 *   each pair in a worker of `slots` and the waits in none, until the state answers or `ipTimeout`
 *   has passed (then the read errors with that 500). What the reads find then (usually a stopped
 *   instance) is the answer.
 */
export function readInstance(
  reader: ObservableIncusReader,
  request: InstanceReadRequest,
  options: ReadInstanceOptions,
): Observable<InstanceAnswer> {
  const { ipTimeout = 10_000, pollInterval = 150, scheduler, slots, onFirstAnswer, serves } = options;
  const { project, name } = request;
  const call = <T>(work: () => ObservableInput<T>): Observable<T> => (slots === undefined ? defer(work) : slots.run(work));
  let firstAnswered = false;
  const firstAnswer = (): void => {
    if (firstAnswered) return;
    firstAnswered = true;
    onFirstAnswer?.();
  };
  const both$ = (): Observable<InstanceAnswer> =>
    reader.instance$(project, name).pipe(
      switchMap((instance) =>
        serves !== undefined && !serves(instance)
          ? of<InstanceAnswer>({ instance, state: UNREAD_STATE, served: false })
          : reader.instanceState$(project, name).pipe(
              map((state): InstanceAnswer => ({ instance, state })),
              catchError((error: unknown) => throwError(() => (isStopUnderWay(instance, error) ? new StopUnderWay(error) : error))),
            ),
      ),
    );
  // Set when the read starts (subscribed), not when it is built.
  let deadline = 0;
  // A stop under way: read both again after a poll interval, while there is time for it.
  const reread = (error: unknown): Observable<InstanceAnswer> => {
    if (!(error instanceof StopUnderWay)) return throwError(() => error);
    if (scheduler.now() + pollInterval > deadline) return throwError(() => error.answer);
    firstAnswer();
    return timer(pollInterval, scheduler).pipe(
      switchMap(() => call(both$)),
      catchError(reread),
    );
  };
  const first$ = defer(() => {
    deadline = scheduler.now() + ipTimeout;
    return both$();
  }).pipe(catchError(reread));
  return first$.pipe(
    switchMap((first) => {
      firstAnswer();
      if (first.served === false || !worthWaiting(request, first)) return of(first);
      let last = first;
      const polled$ = timer(pollInterval, pollInterval, scheduler).pipe(
        exhaustMap(() => call(() => reader.instanceState$(project, name)).pipe(catchError(() => EMPTY))),
        map((state): InstanceAnswer => (last = { instance: last.instance, state })),
        concatMap((answer) => {
          if (!settled(request, answer)) return EMPTY;
          if (answer.instance.status_code === RUNNING || answer.state.status_code !== RUNNING) return of(answer);
          // The instance was read before it ran: its status and expanded devices may be stale.
          return call(() => reader.instance$(project, name)).pipe(
            map((instance): InstanceAnswer => ({ instance, state: answer.state })),
            catchError(() => of(answer)),
          );
        }),
      );
      const givenUp$ = timer(ipTimeout, scheduler).pipe(map(() => last));
      return race(polled$, givenUp$).pipe(take(1));
    }),
  );
}
