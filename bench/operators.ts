/**
 * `npm run bench:operators`: the operator kit against plain RxJS, measured in the same run.
 * One line of JSON per figure. Baselines: `mergeMap(fn, N)` holding the same number of waiting
 * items; `distinct()` for admission; a head-indexed Array for the ring's memory.
 *
 * A baseline that would take longer than BASELINE_LIMIT_MS is stopped there and reported with
 * what it managed (`finished: false`): the rate it reached is still a rate.
 */
import { cpus } from 'node:os';
import { Observable, Subscription, distinct, from, mergeMap } from 'rxjs';
import { AdmissionLedger, OrderedLine, RingQueue, TRASH, admit, done, releaseInOrder, workerPool } from '../index';

const DEPTHS = [1_000, 100_000, 1_000_000];
const CONCURRENCY = 16;
const BASELINE_LIMIT_MS = Number(process.env.BASELINE_LIMIT_MS ?? 30_000);

interface Run {
  items: number;
  ms: number;
  finished: boolean;
}

const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const rate = (r: Run): number => Math.round((r.items / r.ms) * 1000);
const print = (figure: Record<string, unknown>): void => console.log(JSON.stringify(figure));

/** Work that answers on the next microtask: cheap, asynchronous, so every item really waits. */
function microtask<T>(value: T): Observable<T> {
  return new Observable<T>((s) => {
    queueMicrotask(() => {
      s.next(value);
      s.complete();
    });
  });
}

/** Pushes `depth` items synchronously into `pipeline` and waits until `depth` results or the limit. */
function measure<T>(depth: number, items: () => T[], pipeline: (source: Observable<T>) => Observable<unknown>, limitMs = Infinity): Promise<Run> {
  const input = items();
  return new Promise((resolve) => {
    let count = 0;
    const subscription = new Subscription();
    const start = now();
    const finish = (finished: boolean): void => {
      subscription.unsubscribe();
      resolve({ items: count, ms: now() - start, finished });
    };
    subscription.add(pipeline(from(input)).subscribe(() => {
      count++;
      if (count === depth) finish(true);
      // Checked here, not with a timer: a chain of microtasks never lets a timer run.
      else if ((count & 1023) === 0 && now() - start > limitMs) finish(false);
    }));
    if (count === depth) finish(true);
  });
}

/** Runs every pipeline once, small, so the first figure does not measure the JIT compiling it. */
async function warmUp(): Promise<void> {
  const depth = 20_000;
  const ledger = new AdmissionLedger<number, number>({ key: (n) => n, window: 1, capacity: Infinity });
  const tickets = () => Array.from({ length: depth }, (_, i) => ledger.decide(i) as NonNullable<ReturnType<typeof ledger.decide>>);
  const numbers = () => Array.from({ length: depth }, (_, i) => i);
  await measure(depth, tickets, (s) => s.pipe(workerPool({ concurrency: CONCURRENCY, work: (t) => microtask(done(t.value)) })));
  await measure(depth, numbers, (s) => s.pipe(mergeMap((i) => microtask(i), CONCURRENCY)));
  await measure(depth, numbers, (s) => s.pipe(releaseInOrder((i) => microtask(i))));
  timeSync(numbers(), (s) => s.pipe(admit(new AdmissionLedger({ key: (n: number) => n, window: 1, capacity: Infinity }))));
  timeSync(numbers(), (s) => s.pipe(distinct((n) => n)));
}

async function benchWorkerPool(): Promise<void> {
  for (const depth of DEPTHS) {
    const ledger = new AdmissionLedger<number, number>({ key: (n) => n, window: 1, capacity: Infinity });
    const tickets = () =>
      Array.from({ length: depth }, (_, i) => {
        const offer = ledger.offer(i);
        if (!offer.admitted) throw new Error('refused');
        return offer.ticket;
      });
    const pool = await measure(depth, tickets, (s) => s.pipe(workerPool({ concurrency: CONCURRENCY, work: (t) => microtask(done(t.value)) })));
    const base = await measure(depth, () => Array.from({ length: depth }, (_, i) => i), (s) => s.pipe(mergeMap((i) => microtask(i), CONCURRENCY)), BASELINE_LIMIT_MS);
    print({
      figure: 'workerPool throughput',
      waiting: depth,
      concurrency: CONCURRENCY,
      items_per_s: rate(pool),
      baseline: `mergeMap(fn, ${CONCURRENCY})`,
      baseline_items_per_s: rate(base),
      baseline_finished: base.finished,
      ratio: +(rate(pool) / Math.max(rate(base), 1)).toFixed(2),
    });
  }
}

async function benchReleaseInOrder(): Promise<void> {
  for (const depth of DEPTHS) {
    // The head answers last (a macrotask later), so every other item waits in the line first.
    const settle = (i: number): Observable<number | typeof TRASH> =>
      i === 0 ? new Observable((s) => void setImmediate(() => (s.next(i), s.complete()))) : microtask(i);
    const line = await measure(depth, () => Array.from({ length: depth }, (_, i) => i), (s) => s.pipe(releaseInOrder(settle)));
    const base = await measure(depth, () => Array.from({ length: depth }, (_, i) => i), (s) => s.pipe(mergeMap((i) => microtask(i), CONCURRENCY)), BASELINE_LIMIT_MS);
    print({
      figure: 'releaseInOrder throughput',
      waiting: depth,
      items_per_s: rate(line),
      baseline: `mergeMap(fn, ${CONCURRENCY}) (unordered)`,
      baseline_items_per_s: rate(base),
      baseline_finished: base.finished,
      ratio: +(rate(line) / Math.max(rate(base), 1)).toFixed(2),
    });
  }
  // The line on its own, without RxJS around it: push, settle in reverse, release.
  const depth = 1_000_000;
  const start = now();
  const ordered = new OrderedLine<number>();
  const places = Array.from({ length: depth }, (_, i) => ordered.push(i));
  for (let i = depth - 1; i >= 0; i--) ordered.settle(places[i]);
  const released = ordered.release().length;
  print({ figure: 'OrderedLine push/settle/release', items: released, items_per_s: Math.round((depth / (now() - start)) * 1000) });
}

/** Times a synchronous pipeline over `input` from subscription to completion. */
function timeSync<T>(input: T[], pipeline: (source: Observable<T>) => Observable<unknown>): { ms: number; out: number } {
  let out = 0;
  const start = now();
  pipeline(from(input)).subscribe(() => out++);
  return { ms: now() - start, out };
}

function benchAdmission(): void {
  const sightings = 1_000_000;
  for (const distinctKeys of [1_000_000, 100_000]) {
    const input = Array.from({ length: sightings }, (_, i) => i % distinctKeys);
    const ledger = new AdmissionLedger<number, number>({ key: (n) => n, window: 60_000, capacity: 2_000_000 });
    const ours = timeSync(input, (s) => s.pipe(admit(ledger)));
    const base = timeSync(input, (s) => s.pipe(distinct((n) => n)));
    if (ours.out !== distinctKeys || base.out !== distinctKeys) throw new Error('admission bench: wrong number admitted');
    print({
      figure: 'admission decisions',
      sightings,
      distinct_keys: distinctKeys,
      decisions_per_s: Math.round((sightings / ours.ms) * 1000),
      baseline: 'distinct(key)',
      baseline_decisions_per_s: Math.round((sightings / base.ms) * 1000),
    });
  }
}

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc (npm run bench:operators does)');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

function benchRingMemory(): void {
  const burst = 1_000_000;
  const item = { id: 1 };

  const before = heapAfterGc();
  const ring = new RingQueue<object>();
  for (let i = 0; i < burst; i++) ring.push(item);
  const ringPeak = heapAfterGc() - before;
  while (ring.length > 0) ring.shift();
  const ringAfter = heapAfterGc() - before;

  // What avoiding Array.shift usually looks like: an array and a head index.
  const before2 = heapAfterGc();
  const queue: (object | undefined)[] = [];
  let head = 0;
  for (let i = 0; i < burst; i++) queue.push(item);
  const arrayPeak = heapAfterGc() - before2;
  while (head < queue.length) queue[head++] = undefined;
  const arrayAfter = heapAfterGc() - before2;

  print({
    figure: 'ring memory after a 1M burst drained',
    burst,
    ring_peak_bytes: ringPeak,
    ring_after_bytes: ringAfter,
    ring_capacity_after: ring.capacity,
    baseline: 'Array with a head index',
    baseline_peak_bytes: arrayPeak,
    baseline_after_bytes: arrayAfter,
    keep: ring.length + queue.length > 0 ? 1 : 0,
  });
}

async function main(): Promise<void> {
  print({ node: process.version, cpus: cpus().length, baseline_limit_ms: BASELINE_LIMIT_MS });
  await warmUp();
  await benchWorkerPool();
  await benchReleaseInOrder();
  benchAdmission();
  benchRingMemory();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
