// The kit's old names, kept for one release so that code written against them keeps compiling
// and running. A class's old name is the very class under its new name, so `instanceof` and the
// types agree whichever name made the object; a function's calls the new one. Removed in the
// next release.
import type { Done, Failed } from './outcomes.js';
import { workDone, workFailed } from './outcomes.js';
import { PerKeyReader, PerKeyReaderConfig } from './PerKeyReader.js';
import { RetryLadderSchedule, RetryLadderScheduleConfig } from './RetryLadderSchedule.js';

/**
 * The old name of {@link PerKeyReader}, the core of {@link readPerKey}: the same class.
 *
 * @deprecated Renamed `PerKeyReader` (its nouns now those of `readPerKey`, whose core it is);
 * this name goes in the next release.
 *
 * @group Deprecated
 */
export const ReadsPerKey = PerKeyReader;
/**
 * @deprecated Renamed `PerKeyReader`; this name goes in the next release.
 *
 * @group Deprecated
 */
export type ReadsPerKey<T, K, R> = PerKeyReader<T, K, R>;

/**
 * @deprecated Renamed `PerKeyReaderConfig`; this name goes in the next release.
 *
 * @group Deprecated
 */
export type ReadsPerKeyConfig<T, K, R> = PerKeyReaderConfig<T, K, R>;

/**
 * The old name of {@link RetryLadderSchedule}, the core of {@link retryLadder}: the same class.
 *
 * @deprecated Renamed `RetryLadderSchedule` (the schedule of `retryLadder`, whose core it is);
 * this name goes in the next release.
 *
 * @group Deprecated
 */
export const RetrySchedule = RetryLadderSchedule;
/**
 * @deprecated Renamed `RetryLadderSchedule`; this name goes in the next release.
 *
 * @group Deprecated
 */
export type RetrySchedule<K> = RetryLadderSchedule<K>;

/**
 * @deprecated Renamed `RetryLadderScheduleConfig`; this name goes in the next release.
 *
 * @group Deprecated
 */
export type RetryScheduleConfig<K> = RetryLadderScheduleConfig<K>;

/**
 * The old name of {@link workDone}: builds a {@link Done} outcome.
 *
 * @deprecated Renamed `workDone` (`done` says nothing of what is done, and meets every other
 * `done` in scope); this name goes in the next release.
 *
 * @group Deprecated
 */
export function done<R>(value: R, options: { freeAfter?: number } = {}): Done<R> {
  return workDone(value, options);
}

/**
 * The old name of {@link workFailed}: builds a {@link Failed} outcome.
 *
 * @deprecated Renamed `workFailed` (`failed` says nothing of what failed); this name goes in the
 * next release.
 *
 * @group Deprecated
 */
export function failed(error: unknown): Failed {
  return workFailed(error);
}
