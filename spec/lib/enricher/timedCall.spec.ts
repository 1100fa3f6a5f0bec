import { VirtualTimeScheduler } from 'rxjs';
import { UnsubscribedError } from '@rxfleet/operators';
import { ReadKind, ReadOutcome, ReadTimeoutError, timedCall, timedReader } from '../../../lib/enricher/reads/observableReader';
import { IncusApiError, IncusReader } from '../../../lib/incus/api';

// A promise-based reader's call, timed in one subscriber: what fromAbortable under timeout, tap
// and finalize did, outcome for outcome. The timeout runs in virtual time; the promises settle
// in microtasks, which `settle()` lets run.

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface Seen {
  values: unknown[];
  error?: unknown;
  completed: boolean;
  reads: Array<[ReadKind, ReadOutcome, number]>;
  signal?: AbortSignal;
}

function subscribeTo(work: (signal: AbortSignal) => PromiseLike<unknown>, readTimeout = 100) {
  const scheduler = new VirtualTimeScheduler();
  const seen: Seen = { values: [], completed: false, reads: [] };
  const call = timedCall(
    'instance',
    () => 'GET instance default/c1',
    (signal) => {
      seen.signal = signal;
      return work(signal);
    },
    { readTimeout, scheduler, onRead: (kind, outcome, ms) => seen.reads.push([kind, outcome, ms]) },
  );
  const subscription = call.subscribe({
    next: (value) => seen.values.push(value),
    error: (error: unknown) => (seen.error = error),
    complete: () => (seen.completed = true),
  });
  return { scheduler, seen, subscription };
}

describe('timedCall', () => {
  it('emits the answer once, completes, and counts it ok with its duration on the scheduler', async () => {
    let resolve: (value: string) => void = () => undefined;
    const { scheduler, seen } = subscribeTo(() => new Promise<string>((r) => (resolve = r)));
    scheduler.schedule(() => resolve('answer'), 40);
    // Virtual time runs to 40 ms only: the timeout at 100 is still ahead when the answer lands.
    scheduler.maxFrames = 40;
    scheduler.flush();
    await settle();
    expect(seen.values).toEqual(['answer']);
    expect(seen.completed).toBe(true);
    expect(seen.error).toBeUndefined();
    expect(seen.reads).toEqual([['instance', 'ok', 40]]);
    expect(seen.signal?.aborted).toBe(false);
    // The timeout went with the answer.
    expect(scheduler.actions).toHaveLength(0);
  });

  it('counts the answer ok with the time it took when it comes before the timeout', async () => {
    const { scheduler, seen } = subscribeTo(() => Promise.resolve('answer'));
    await settle();
    expect(seen.reads).toEqual([['instance', 'ok', 0]]);
    // The timeout went with the answer: nothing is left to run.
    expect(scheduler.actions).toHaveLength(0);
  });

  it('a rejection errors it, counted not_found when Incus says the thing does not exist', async () => {
    const gone = new IncusApiError('not found', 404);
    const { seen } = subscribeTo(() => Promise.reject(gone));
    await settle();
    expect(seen.error).toBe(gone);
    expect(seen.reads).toEqual([['instance', 'not_found', 0]]);
  });

  it('any other rejection, or a throw, is counted error', async () => {
    const broken = new Error('connection reset');
    const rejected = subscribeTo(() => Promise.reject(broken));
    await settle();
    expect(rejected.seen.error).toBe(broken);
    expect(rejected.seen.reads).toEqual([['instance', 'error', 0]]);

    const thrown = subscribeTo(() => {
      throw broken;
    });
    expect(thrown.seen.error).toBe(broken);
    expect(thrown.seen.reads).toEqual([['instance', 'error', 0]]);
    expect(thrown.scheduler.actions).toHaveLength(0);
  });

  it('no answer within the timeout: the call is aborted and errors with a ReadTimeoutError, counted timeout', async () => {
    let resolve: (value: string) => void = () => undefined;
    const { scheduler, seen } = subscribeTo(() => new Promise<string>((r) => (resolve = r)), 100);
    scheduler.flush();
    expect(seen.error).toBeInstanceOf(ReadTimeoutError);
    expect((seen.error as Error).message).toBe('GET instance default/c1: no answer within 100 ms');
    expect(seen.signal?.aborted).toBe(true);
    expect(seen.signal?.reason).toBeInstanceOf(UnsubscribedError);
    expect(seen.reads).toEqual([['instance', 'timeout', 100]]);
    // An answer that lands after the timeout is ignored.
    resolve('late');
    await settle();
    expect(seen.values).toEqual([]);
    expect(seen.reads).toHaveLength(1);
  });

  it('unsubscribing before the answer aborts the call, counted aborted; the late answer is ignored', async () => {
    let resolve: (value: string) => void = () => undefined;
    const { scheduler, seen, subscription } = subscribeTo(() => new Promise<string>((r) => (resolve = r)));
    scheduler.schedule(() => subscription.unsubscribe(), 30);
    scheduler.flush();
    expect(seen.signal?.aborted).toBe(true);
    expect(seen.signal?.reason).toBeInstanceOf(UnsubscribedError);
    expect(seen.reads).toEqual([['instance', 'aborted', 30]]);
    resolve('late');
    await settle();
    expect(seen.values).toEqual([]);
    expect(seen.error).toBeUndefined();
    expect(seen.reads).toHaveLength(1);
  });
});

describe('timedReader over a promise-based reader', () => {
  it('hands each call its signal and names it in the timeout', () => {
    const scheduler = new VirtualTimeScheduler();
    const signals: AbortSignal[] = [];
    const never = (signal?: AbortSignal): Promise<never> => {
      if (signal !== undefined) signals.push(signal);
      return new Promise<never>(() => undefined);
    };
    const client = {
      getInstance: (_p: string, _n: string, signal?: AbortSignal) => never(signal),
      getInstanceState: (_p: string, _n: string, signal?: AbortSignal) => never(signal),
      getNetwork: (_p: string, _n: string, signal?: AbortSignal) => never(signal),
      getProject: (_n: string, signal?: AbortSignal) => never(signal),
      listProjectNames: (signal?: AbortSignal) => never(signal),
      listNetworkNames: (_p: string, signal?: AbortSignal) => never(signal),
      listInstanceNames: (_p: string, signal?: AbortSignal) => never(signal),
    } as IncusReader;
    const reads: Array<[ReadKind, ReadOutcome]> = [];
    const reader = timedReader(client, { readTimeout: 50, scheduler, onRead: (kind, outcome) => reads.push([kind, outcome]) });
    const errors: string[] = [];
    const record = { error: (error: Error) => errors.push(error.message) };
    reader.instance$('p', 'c1').subscribe(record);
    reader.instanceState$('p', 'c1').subscribe(record);
    reader.network$('p', 'br0').subscribe(record);
    reader.project$('p').subscribe(record);
    reader.projectNames$().subscribe(record);
    reader.networkNames$('p').subscribe(record);
    reader.instanceNames$('p').subscribe(record);
    expect(signals).toHaveLength(7);
    scheduler.flush();
    expect(errors).toEqual([
      'GET instance p/c1: no answer within 50 ms',
      'GET instance state p/c1: no answer within 50 ms',
      'GET network p/br0: no answer within 50 ms',
      'GET project p: no answer within 50 ms',
      'list projects: no answer within 50 ms',
      'list networks of p: no answer within 50 ms',
      'list instances of p: no answer within 50 ms',
    ]);
    expect(signals.every((signal) => signal.aborted)).toBe(true);
    expect(reads).toEqual([
      ['instance', 'timeout'],
      ['instance_state', 'timeout'],
      ['network', 'timeout'],
      ['project', 'timeout'],
      ['listing', 'timeout'],
      ['listing', 'timeout'],
      ['listing', 'timeout'],
    ]);
  });
});
