import { NEVER, Observable, map, of } from 'rxjs';
import {
  AdmissionLedger,
  LineSplitter,
  PauseGate,
  PerKeyReader,
  RetryLadderSchedule,
  SlotPool,
  admit,
  collectUntilIdle,
  debounceByKey,
  fromAbortable,
  pacedSweep,
  pauseWhen,
  readPerKey,
  retryLadder,
  splitLines,
  valueTicket,
  withSlot,
  workDone,
  workerPool,
} from '@rxfleet/operators';

// Every operator and core checks its options when it is made: one error, thrown by the call that
// was given the bad option, naming where, the option and the value. A number out of range is a
// RangeError, a callback that is not a function a TypeError. Nothing is subscribed to find out.

/** A value as the error message shows it. */
const shown = (value: unknown): string => (typeof value === 'string' ? JSON.stringify(value) : String(value));

/** Makes the operator or core with `option` set to `value`, and nothing else wrong. */
type Make = (value: unknown) => unknown;

const key = (v: string): string => v;
const never = (): Observable<never> => NEVER;
const ledger = (): AdmissionLedger<string, string> => new AdmissionLedger({ key, window: 1, capacity: 1 });

/** A delay a timer waits: 0 to 2^31 - 1 ms. */
const LONGEST = 2 ** 31 - 1;
const badDelays = [Number.NaN, -1, -0.5, Infinity, LONGEST + 1, '5'];
const goodDelays = [0, 0.5, 250, LONGEST];
/** A count from 1: a whole number, or Infinity. */
const badCounts = [Number.NaN, -1, 0, 1.5, '2'];
const goodCounts = [1, 16, Infinity];

const numeric: Array<{ where: string; option: string; make: Make; bad: unknown[]; good: unknown[] }> = [
  {
    where: 'AdmissionLedger',
    option: 'window',
    make: (window) => new AdmissionLedger({ key, window: window as number, capacity: 1 }),
    bad: [Number.NaN, -1, -Infinity, '5'],
    good: [0, 1.5, 60_000, Infinity],
  },
  {
    where: 'AdmissionLedger',
    option: 'capacity',
    make: (capacity) => new AdmissionLedger({ key, window: 1, capacity: capacity as number }),
    bad: badCounts,
    good: goodCounts,
  },
  { where: 'SlotPool', option: 'size', make: (size) => new SlotPool(size as number), bad: badCounts, good: goodCounts },
  {
    where: 'workerPool',
    option: 'concurrency',
    make: (concurrency) => workerPool({ concurrency: concurrency as number, work: () => [workDone(1)] }),
    bad: badCounts,
    good: goodCounts,
  },
  {
    where: 'readPerKey',
    option: 'concurrency',
    make: (concurrency) => readPerKey({ key, read: never, concurrency: concurrency as number }),
    bad: badCounts,
    good: goodCounts,
  },
  {
    where: 'debounceByKey',
    option: 'window',
    make: (window) => debounceByKey({ key, window: window as number }),
    bad: badDelays,
    good: goodDelays,
  },
  ...(['fast', 'slow', 'maxSlow'] as const).map((option) => ({
    where: 'retryLadder',
    option,
    make: (value: unknown) => retryLadder({ [option]: value }),
    bad: badDelays,
    good: option === 'slow' ? [1, 5000, LONGEST] : goodDelays,
  })),
  { where: 'retryLadder', option: 'slow', make: (slow) => retryLadder({ slow: slow as number }), bad: [0, 0.5], good: [1] },
  {
    where: 'retryLadder',
    option: 'fastAttempts',
    make: (fastAttempts) => retryLadder({ fastAttempts: fastAttempts as number }),
    bad: [Number.NaN, -1, 1.5, '3'],
    good: [0, 3, Infinity],
  },
  ...(['fast', 'slow', 'maxSlow'] as const).map((option) => ({
    where: 'RetryLadderSchedule',
    option,
    make: (value: unknown) => new RetryLadderSchedule({ onDue: () => undefined, [option]: value }),
    bad: option === 'slow' ? [...badDelays, 0] : badDelays,
    good: option === 'slow' ? [1, LONGEST] : goodDelays,
  })),
  {
    where: 'RetryLadderSchedule',
    option: 'fastAttempts',
    make: (fastAttempts) => new RetryLadderSchedule({ onDue: () => undefined, fastAttempts: fastAttempts as number }),
    bad: [Number.NaN, -1, 1.5],
    good: [0, Infinity],
  },
  ...(['idle', 'timeout'] as const).map((option) => ({
    where: 'collectUntilIdle',
    option,
    make: (value: unknown) => collectUntilIdle({ [option]: value }),
    bad: badDelays,
    good: goodDelays,
  })),
  ...(['delay', 'interval'] as const).map((option) => ({
    where: 'pacedSweep',
    option,
    make: (value: unknown) => pacedSweep({ list: () => [], delay: 1, interval: 1, [option]: value }),
    bad: badDelays,
    good: goodDelays,
  })),
  {
    where: 'splitLines',
    option: 'maxBytes',
    make: (maxBytes) => splitLines({ maxBytes: maxBytes as number }),
    bad: badCounts,
    good: goodCounts,
  },
  { where: 'LineSplitter', option: 'maxBytes', make: (maxBytes) => new LineSplitter(maxBytes as number), bad: badCounts, good: goodCounts },
  {
    where: 'workDone',
    option: 'freeAfter',
    make: (freeAfter) => workDone(1, { freeAfter: freeAfter as number }),
    bad: badDelays,
    good: goodDelays,
  },
];

const callbacks: Array<{ where: string; option: string; make: Make }> = [
  { where: 'AdmissionLedger', option: 'key', make: (k) => new AdmissionLedger({ key: k as typeof key, window: 1, capacity: 1 }) },
  { where: 'admit', option: 'onRefuse', make: (f) => admit(ledger(), { onRefuse: f as () => void }) },
  { where: 'admit', option: 'ledger.decide', make: (l) => admit(l as AdmissionLedger<string, string>) },
  { where: 'pauseWhen', option: 'onDrop', make: (f) => pauseWhen(of(false), { onDrop: f as () => void }) },
  { where: 'workerPool', option: 'work', make: (f) => workerPool({ concurrency: 1, work: f as () => [] }) },
  { where: 'workerPool', option: 'onBusy', make: (f) => workerPool({ concurrency: 1, work: () => [], onBusy: f as () => void }) },
  { where: 'withSlot', option: 'pool.run', make: (p) => withSlot(p as SlotPool) },
  ...(['key', 'read', 'supersedes', 'fresh'] as const).map((option) => ({
    where: 'readPerKey',
    option,
    make: (f: unknown) => readPerKey({ key, read: never, [option]: f }),
  })),
  ...(['key', 'read', 'onLanded', 'supersedes', 'fresh', 'onError'] as const).map((option) => ({
    where: 'PerKeyReader',
    option,
    make: (f: unknown) => new PerKeyReader({ key, read: never, onLanded: () => undefined, [option]: f }),
  })),
  ...(['key', 'collapsible', 'superseded'] as const).map((option) => ({
    where: 'debounceByKey',
    option,
    make: (f: unknown) => debounceByKey({ key, [option]: f }),
  })),
  { where: 'retryLadder', option: 'onPendingChange', make: (f) => retryLadder({ onPendingChange: f as () => void }) },
  ...(['onDue', 'onPendingChange', 'onError'] as const).map((option) => ({
    where: 'RetryLadderSchedule',
    option,
    make: (f: unknown) => new RetryLadderSchedule({ onDue: () => undefined, [option]: f }),
  })),
  ...(['list', 'failureDelay'] as const).map((option) => ({
    where: 'pacedSweep',
    option,
    make: (f: unknown) => pacedSweep({ list: () => [], delay: 1, interval: 1, [option]: f }),
  })),
  { where: 'fromAbortable', option: 'work', make: (f) => fromAbortable(f as () => Promise<void>) },
];

describe("every operator and core checks its options when it is made (the kit's edges)", () => {
  describe.each(numeric)('$where: $option', ({ where, option, make, bad, good }) => {
    it.each(bad.map((value) => [shown(value), value]))('%s is one RangeError naming the option and the value', (_, value) => {
      expect(() => make(value)).toThrow(RangeError);
      expect(() => make(value)).toThrow(`${where}: ${option} must be`);
      expect(() => make(value)).toThrow(new RegExp(`got ${shown(value).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`));
    });

    it(`takes ${good.map(shown).join(', ')}`, () => {
      for (const value of good) expect(() => make(value)).not.toThrow();
    });
  });

  describe.each(callbacks)('$where: $option', ({ where, option, make }) => {
    it.each([
      ['a number', 42],
      ['a string', 'f'],
      ['an object', {}],
    ])('%s instead of a function is one TypeError naming the option', (_, value) => {
      expect(() => make(value)).toThrow(TypeError);
      expect(() => make(value)).toThrow(`${where}: ${option} must be a function`);
    });
  });

  it('pauseWhen and PauseGate: an `initiallyPaused` that is not a boolean is a TypeError', () => {
    expect(() => pauseWhen(of(false), { initiallyPaused: 'yes' as unknown as boolean })).toThrow(
      new TypeError('pauseWhen: initiallyPaused must be a boolean, got yes'),
    );
    expect(() => new PauseGate(1 as unknown as boolean)).toThrow(new TypeError('PauseGate: initiallyPaused must be a boolean, got 1'));
  });

  it('fromAbortable: an `options.signal` that is not an AbortSignal is a TypeError', () => {
    expect(() => fromAbortable(() => Promise.resolve(1), { signal: {} as AbortSignal })).toThrow(
      new TypeError('fromAbortable: options.signal must be an AbortSignal'),
    );
    expect(() => fromAbortable(() => Promise.resolve(1), { signal: new AbortController().signal })).not.toThrow();
  });

  it('readPerKey: `concurrency` and `slots` together are a TypeError', () => {
    expect(() => readPerKey({ key, read: never, concurrency: 2, slots: new SlotPool(2) })).toThrow(TypeError);
  });

  it('is checked at the call that made it, before anything is subscribed', () => {
    let subscribed = 0;
    const source = new Observable<string>(() => {
      subscribed++;
    });
    expect(() => source.pipe(debounceByKey({ key, window: Number.NaN }))).toThrow(RangeError);
    expect(() => source.pipe(map(valueTicket), workerPool({ concurrency: 1.5, work: () => [] }))).toThrow(RangeError);
    expect(subscribed).toBe(0);
  });
});
