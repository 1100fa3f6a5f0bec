/**
 * `npm run bench:operators`: the operator kit against plain RxJS, measured in the same run.
 * One line of JSON per figure, each beside its baseline, the ratio beside its goal (issues 11, 25, 26), and
 * the load average at the start and the end: a figure is only as good as its machine.
 *
 * Baselines: `mergeMap(fn, 16)` holding the same number of waiting items (for the pool, and,
 * unordered, for `releaseInOrder`); for admission of new keys, a bare `Map` keeping one small object
 * per key (what any admission that hands out a ticket per key must pay), with `distinct(key)` beside
 * it; an Array with a head index for the ring's memory.
 *
 * A short queue is measured many times over (rounds of `waiting` items, pool and baseline
 * alternating, the median round reported), so a 1,000-deep figure is not one 2 ms sample. A
 * baseline that would take longer than BASELINE_LIMIT_MS is stopped there and reported with what it
 * managed (`baseline_finished: false`): the rate it reached is still a rate.
 *
 * BENCH_ONLY=pool|ordered|settled|admission|memory runs one group and BENCH_DEPTHS=1000 picks depths (for
 * profiling: see docs/operators-benchmarks.md).
 */
import { cpus } from 'node:os';
import { Observable, Subject, Subscription, asyncScheduler, distinct, from, mergeMap } from 'rxjs';
import { AdmissionLedger, OrderedLine, RingQueue, Settling, TRASH, admit, workDone, releaseInOrder, workerPool } from '@rxfleet/operators';
import { benchOutput } from './machineLoad';

const DEPTHS = (process.env.BENCH_DEPTHS ?? '1000,100000,1000000').split(',').map(Number);
const CONCURRENCY = 16;
const BASELINE_LIMIT_MS = Number(process.env.BASELINE_LIMIT_MS ?? 30_000);
// Items per figure at a shallow depth: rounds of `depth` items until about this many have run.
const ITEMS_PER_FIGURE = Number(process.env.ITEMS_PER_FIGURE ?? 400_000);
const ONLY = process.env.BENCH_ONLY;

// The goals, as ratios to the baseline measured in the same run: issue 11's for the pool, issue 25's
// for the line (the settled surface must not cost speed), issue 26's for admission (of the Map floor).
const GOALS = {
  pool: new Map([
    [1_000, 1.0],
    [1_000_000, 50],
  ]),
  ordered: new Map([[1_000, 1.0]]),
  admissionNewKeys: 0.95,
};

interface Run {
  items: number;
  ms: number;
  finished: boolean;
}

const now = (): number => Number(process.hrtime.bigint()) / 1e6;
const rate = (r: Run): number => Math.round((r.items / r.ms) * 1000);
const output = benchOutput('bench/operators.ts');
const print = (figure: Record<string, unknown>): void => output.print(figure);

/** Ratio, goal and verdict, printed beside each other. */
function verdict(ours: number, base: number, goal: number | undefined): Record<string, unknown> {
  const ratio = +(ours / Math.max(base, 1)).toFixed(2);
  return goal === undefined ? { ratio } : { ratio, goal: `>= ${goal}x`, meets_goal: ratio >= goal };
}

/** Work that answers on the next microtask: cheap, asynchronous, so every item really waits. */
function microtask<T>(value: T): Observable<T> {
  return new Observable<T>((s) => {
    queueMicrotask(() => {
      s.next(value);
      s.complete();
    });
  });
}

/** Pushes `input` synchronously into `pipeline` and waits for as many results, or the limit. */
function measure<T>(input: T[], pipeline: (source: Observable<T>) => Observable<unknown>, limitMs = Infinity): Promise<Run> {
  const depth = input.length;
  return new Promise((resolve) => {
    let count = 0;
    const subscription = new Subscription();
    const start = now();
    const finish = (finished: boolean): void => {
      subscription.unsubscribe();
      resolve({ items: count, ms: now() - start, finished });
    };
    subscription.add(
      pipeline(from(input)).subscribe(() => {
        count++;
        if (count === depth) finish(true);
        // Checked here, not with a timer: a chain of microtasks never lets a timer run.
        else if ((count & 1023) === 0 && now() - start > limitMs) finish(false);
      }),
    );
    if (count === depth) finish(true);
  });
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
};

/**
 * Runs `ours` and `base` on fresh input of `depth` items, alternating, enough rounds for
 * ITEMS_PER_FIGURE items each (one round at a depth that large), and returns the median rates.
 */
async function compare<A, B>(
  depth: number,
  ours: { input: () => A[]; pipeline: (s: Observable<A>) => Observable<unknown> },
  base: { input: () => B[]; pipeline: (s: Observable<B>) => Observable<unknown> },
): Promise<{ ours: number; base: number; baseFinished: boolean; rounds: number }> {
  const rounds = Math.max(1, Math.floor(ITEMS_PER_FIGURE / depth));
  const oursRates: number[] = [];
  const baseRates: number[] = [];
  let baseFinished = true;
  for (let round = 0; round < rounds; round++) {
    // Alternating which goes first, so neither always inherits the other's garbage.
    const first = round % 2 === 0;
    if (first) oursRates.push(rate(await measure(ours.input(), ours.pipeline)));
    const b = await measure(base.input(), base.pipeline, BASELINE_LIMIT_MS);
    baseFinished &&= b.finished;
    baseRates.push(rate(b));
    if (!first) oursRates.push(rate(await measure(ours.input(), ours.pipeline)));
  }
  return { ours: median(oursRates), base: median(baseRates), baseFinished, rounds };
}

const numbers = (depth: number) => (): number[] => Array.from({ length: depth }, (_, i) => i);

function ticketsOf(depth: number): () => ReturnType<AdmissionLedger<number, number>['decide']>[] {
  return () => {
    const ledger = new AdmissionLedger<number, number>({ key: (n) => n, window: 1, capacity: Infinity });
    return Array.from({ length: depth }, (_, i) => ledger.decide(i));
  };
}

const pool = workerPool({
  concurrency: CONCURRENCY,
  work: (t: NonNullable<ReturnType<AdmissionLedger<number, number>['decide']>>) => microtask(workDone(t.value)),
});
const unordered = mergeMap((i: number) => microtask(i), CONCURRENCY);
// The head answers last (a macrotask later), so every other item waits in the line first.
const ordered = releaseInOrder((i: number): Observable<number | typeof TRASH> =>
  i === 0 ? new Observable((s) => void setImmediate(() => (s.next(i), s.complete()))) : microtask(i),
);

/** Runs every pipeline a little, so the first figure does not measure the JIT compiling it. */
async function warmUp(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await measure(ticketsOf(10_000)() as never[], (s) => s.pipe(pool));
    await measure(numbers(10_000)(), (s) => s.pipe(unordered));
    await measure(numbers(10_000)(), (s) => s.pipe(ordered));
  }
  timeSync(numbers(100_000)(), (s) => s.pipe(admit(new AdmissionLedger({ key: (n: number) => n, window: 1, capacity: Infinity }))));
  timeSync(numbers(100_000)(), (s) => s.pipe(distinct((n) => n)));
}

async function benchWorkerPool(): Promise<void> {
  for (const depth of DEPTHS) {
    const r = await compare(
      depth,
      { input: ticketsOf(depth) as () => never[], pipeline: (s) => s.pipe(pool) },
      { input: numbers(depth), pipeline: (s) => s.pipe(unordered) },
    );
    print({
      figure: 'workerPool throughput',
      waiting: depth,
      concurrency: CONCURRENCY,
      rounds: r.rounds,
      items_per_s: r.ours,
      baseline: `mergeMap(fn, ${CONCURRENCY})`,
      baseline_items_per_s: r.base,
      baseline_finished: r.baseFinished,
      ...verdict(r.ours, r.base, GOALS.pool.get(depth)),
    });
  }
}

async function benchReleaseInOrder(): Promise<void> {
  for (const depth of DEPTHS) {
    const r = await compare(
      depth,
      { input: numbers(depth), pipeline: (s) => s.pipe(ordered) },
      { input: numbers(depth), pipeline: (s) => s.pipe(unordered) },
    );
    print({
      figure: 'releaseInOrder throughput',
      waiting: depth,
      rounds: r.rounds,
      items_per_s: r.ours,
      baseline: `mergeMap(fn, ${CONCURRENCY}) (unordered)`,
      baseline_items_per_s: r.base,
      baseline_finished: r.baseFinished,
      ...verdict(r.ours, r.base, GOALS.ordered.get(depth)),
    });
  }
  // The line on its own, without RxJS around it: push, settle in reverse, flush.
  const depth = 1_000_000;
  const start = now();
  const line = new OrderedLine<number>();
  const places = Array.from({ length: depth }, (_, i) => line.push(i));
  for (let i = depth - 1; i >= 0; i--) line.settle(places[i]);
  const released = line.flush().length;
  print({ figure: 'OrderedLine push/settle/flush', items: released, items_per_s: Math.round((depth / (now() - start)) * 1000) });
}

/** A value its owner answers through a callback, as the enricher's line entries are. */
class Answerable implements Settling<number> {
  private tell: ((answer: number | typeof TRASH) => void) | undefined;
  private answer: number | undefined;

  constructor(readonly n: number) {}

  whenSettled(tell: (answer: number | typeof TRASH) => void): void {
    if (this.answer !== undefined) tell(this.answer);
    else this.tell = tell;
  }

  settle(answer: number): void {
    this.answer = answer;
    const tell = this.tell;
    this.tell = undefined;
    tell?.(answer);
  }
}

/** The answer as an Observable: what a user of releaseInOrder writes for values answered through a callback. */
const answerOf = (value: Answerable): Observable<number> =>
  new Observable<number>((subscriber) =>
    value.whenSettled((answer) => {
      subscriber.next(answer as number);
      subscriber.complete();
    }),
  );

/**
 * A line of values answered through a callback (the enricher's case): `depth` values arrive, then
 * are answered in `order`; microseconds per value from the first arrival to the last emission.
 * `releaseInOrder(settle)` subscribes to an Observable per value, `releaseInOrder()` is told through the
 * callback, `OrderedLine` used directly (push, settle, flush) is the floor.
 */
function settledLine(kind: 'releaseInOrder' | 'selfSettled' | 'OrderedLine', depth: number, order: number[]): number {
  const values = Array.from({ length: depth }, (_, i) => new Answerable(i));
  let out = 0;
  const start = now();
  if (kind === 'OrderedLine') {
    const line = new OrderedLine<number>();
    const places = values.map((v) => line.push(v.n));
    for (const i of order) {
      line.settle(places[i], i);
      out += line.flush().length;
    }
  } else {
    const source = new Subject<Answerable>();
    const release = kind === 'selfSettled' ? releaseInOrder<Answerable>() : releaseInOrder(answerOf);
    source.pipe(release).subscribe(() => out++);
    for (const v of values) source.next(v);
    for (const i of order) values[i].settle(i);
  }
  const us = ((now() - start) * 1000) / depth;
  if (out !== depth) throw new Error(`${kind}: ${out} of ${depth} released`);
  return us;
}

function benchSettledLine(): void {
  const depth = 100_000;
  const rounds = 7;
  const inOrder = Array.from({ length: depth }, (_, i) => i);
  for (const [answered, order] of [
    ['in arrival order', () => inOrder],
    ['at random', () => shuffled(depth)],
  ] as const) {
    const rates: Record<string, number[]> = { releaseInOrder: [], selfSettled: [], OrderedLine: [] };
    for (let round = 0; round < rounds; round++) {
      const o = order();
      const kinds = ['releaseInOrder', 'selfSettled', 'OrderedLine'] as const;
      for (const kind of round % 2 === 0 ? kinds : [...kinds].reverse()) rates[kind].push(settledLine(kind, depth, o));
    }
    const ours = median(rates.releaseInOrder);
    const base = median(rates.selfSettled);
    print({
      figure: 'a line answered through callbacks',
      waiting: depth,
      answered,
      rounds,
      us_per_value: +ours.toFixed(3),
      baseline: 'releaseInOrder() on values that settle themselves (no subscription per value)',
      baseline_us_per_value: +base.toFixed(3),
      floor: 'OrderedLine used directly',
      floor_us_per_value: +median(rates.OrderedLine).toFixed(3),
      cost_ratio: +(ours / base).toFixed(2),
    });
  }
}

function shuffled(n: number): number[] {
  const order = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order;
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
    const newKeys = distinctKeys === sightings;
    const rates: Record<'ours' | 'distinct' | 'floor', number[]> = { ours: [], distinct: [], floor: [] };
    // Five rounds, the order rotating so that none always inherits another's garbage; a fresh ledger,
    // a fresh `distinct` and a fresh Map every time. The floor only means something for new keys.
    const kinds = newKeys ? (['ours', 'floor', 'distinct'] as const) : (['ours', 'distinct'] as const);
    for (let round = 0; round < 5; round++) {
      for (let k = 0; k < kinds.length; k++) {
        const which = kinds[(round + k) % kinds.length];
        if (which === 'floor') {
          rates.floor.push(retainedFloor(input, true));
          continue;
        }
        const ledger = new AdmissionLedger<number, number>({ key: (n) => n, window: 60_000, capacity: 2_000_000 });
        const t = which === 'ours' ? timeSync(input, (s) => s.pipe(admit(ledger))) : timeSync(input, (s) => s.pipe(distinct((n) => n)));
        if (t.out !== distinctKeys) throw new Error(`admission bench: ${which} let ${t.out} through, expected ${distinctKeys}`);
        rates[which].push(Math.round((sightings / t.ms) * 1000));
      }
    }
    const ours = median(rates.ours);
    const viaDistinct = median(rates.distinct);
    const floor = newKeys ? median(rates.floor) : undefined;
    print({
      figure: 'admission decisions',
      sightings,
      distinct_keys: distinctKeys,
      decisions_per_s: ours,
      ...(floor !== undefined
        ? {
            baseline: 'a Map keeping one small object per new key, nothing else (the floor)',
            baseline_decisions_per_s: floor,
            ...verdict(ours, floor, GOALS.admissionNewKeys),
            ledger_alone_per_s: ledgerAlone(input),
            also: 'distinct(key), which keeps no object',
            also_decisions_per_s: viaDistinct,
            ratio_to_distinct: +(ours / viaDistinct).toFixed(2),
            floor_without_objects: 'a Map keeping a number per new key',
            floor_without_objects_per_s: retainedFloor(input, false, 3),
            floor_with_clock: 'the Map floor, plus the one scheduler.now() reading every admission makes (P1 judges a sighting by its age)',
            floor_with_clock_per_s: clockedFloor(input),
          }
        : { baseline: 'distinct(key)', baseline_decisions_per_s: viaDistinct, ...verdict(ours, viaDistinct, undefined) }),
    });
  }
}

/**
 * What any admission that hands out a ticket per new key and remembers it must pay, with no logic at
 * all: a Map keeping one five-field object per key. `distinct` keeps only the key, so this floor,
 * not `distinct`, bounds what a ledger can reach (see docs/operators-benchmarks.md, "What the profile said").
 */
function retainedFloor(input: number[], objects: boolean, rounds = 1): number {
  const rates: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const start = now();
    if (objects) {
      const map = new Map<number, { owner: unknown; value: number; key: number; at: number; state: number }>();
      for (const value of input) if (map.get(value) === undefined) map.set(value, { owner: map, value, key: value, at: 0, state: 0 });
    } else {
      const map = new Map<number, number>();
      for (const value of input) if (map.get(value) === undefined) map.set(value, 0);
    }
    rates.push(Math.round((input.length / (now() - start)) * 1000));
  }
  return median(rates);
}

/**
 * The Map floor plus the clock reading admission cannot do without: a ticket's admission time is
 * what P1's re-admission and `admittedAt` are judged by, read from the scheduler (here the default,
 * the wall clock) once per new key.
 */
function clockedFloor(input: number[]): number {
  const rates: number[] = [];
  for (let round = 0; round < 3; round++) {
    const start = now();
    const epoch = asyncScheduler.now();
    const map = new Map<number, { owner: unknown; value: number; key: number; at: number; state: number }>();
    for (const value of input)
      if (map.get(value) === undefined) map.set(value, { owner: map, value, key: value, at: asyncScheduler.now() - epoch, state: 0 });
    rates.push(Math.round((input.length / (now() - start)) * 1000));
  }
  return median(rates);
}

/** The ledger's decisions without rxjs around them: what `admit` adds is the rest. */
function ledgerAlone(input: number[]): number {
  const rates: number[] = [];
  for (let round = 0; round < 3; round++) {
    const ledger = new AdmissionLedger<number, number>({ key: (n) => n, window: 60_000, capacity: 2_000_000 });
    const start = now();
    for (const value of input) ledger.decide(value);
    rates.push(Math.round((input.length / (now() - start)) * 1000));
  }
  return median(rates);
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

/** The heap a 1M burst through the pool leaves behind once it has drained: flat, or a leak. */
async function benchPoolMemory(): Promise<void> {
  const before = heapAfterGc();
  await measure(ticketsOf(1_000_000)() as never[], (s) => s.pipe(pool));
  const after = heapAfterGc() - before;
  print({
    figure: 'heap retained after 1M tickets through workerPool',
    burst: 1_000_000,
    retained_bytes: after,
    goal: 'flat (< 1 MB)',
    meets_goal: after < 1_000_000,
  });
}

async function main(): Promise<void> {
  print({
    node: process.version,
    cpus: cpus().length,
    // The code users run: the kit's tsc build, not a transpile-on-load of its sources (tsx keeps
    // function names by wrapping every closure it creates, which alone cost the old pool a third).
    kit: require.resolve('@rxfleet/operators'),
    baseline_limit_ms: BASELINE_LIMIT_MS,
    items_per_figure: ITEMS_PER_FIGURE,
  });
  if (!require.resolve('@rxfleet/operators').endsWith('.js'))
    console.error("warning: measuring the kit's TypeScript sources; `npm run bench:operators` measures its build");
  await warmUp();
  if (ONLY === undefined || ONLY === 'pool') await benchWorkerPool();
  if (ONLY === undefined || ONLY === 'ordered') await benchReleaseInOrder();
  if (ONLY === undefined || ONLY === 'settled') benchSettledLine();
  if (ONLY === undefined || ONLY === 'admission') benchAdmission();
  if (ONLY === undefined || ONLY === 'memory') {
    benchRingMemory();
    await benchPoolMemory();
  }
  output.end();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
