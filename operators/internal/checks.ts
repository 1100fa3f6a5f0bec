// The checks every operator and core makes of its options when it is made, so that a bad option
// is one clear error where the user wrote it, not a tight loop or a silent no-op later. A number
// out of range (NaN, negative, fractional where a count is meant, Infinity where it means nothing)
// is a RangeError; a callback that is not a function is a TypeError. Both name where, which
// option and the value given.

/**
 * The longest a timer can wait, in ms: `setTimeout`, in Node and in browsers, fires at once when
 * asked to wait longer than 2^31 - 1 ms (about 24.8 days), which would turn a long wait into a
 * tight loop.
 */
export const LONGEST_DELAY = 2 ** 31 - 1;

/** The value as a message shows it: strings quoted, so `'5'` is not mistaken for `5`. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}

function refuse(where: string, option: string, expected: string, value: unknown): never {
  throw new RangeError(`${where}: ${option} must be ${expected}, got ${shown(value)}`);
}

/** A wait in ms that a timer is armed with: from `min` (0 unless said) to {@link LONGEST_DELAY}. */
export function checkDelay(where: string, option: string, value: unknown, min = 0): void {
  if (typeof value !== 'number' || !(value >= min && value <= LONGEST_DELAY)) {
    refuse(where, option, `a number of milliseconds from ${min} to ${LONGEST_DELAY} (the longest a timer waits)`, value);
  }
}

/** A span of time in ms that is only compared, never waited: 0 or more, `Infinity` meaning never. */
export function checkSpan(where: string, option: string, value: unknown): void {
  if (typeof value !== 'number' || !(value >= 0)) refuse(where, option, 'a number of milliseconds >= 0 (or Infinity)', value);
}

/** A count: a whole number from `min`, or `Infinity` for no bound. */
export function checkCount(where: string, option: string, value: unknown, min: number): void {
  if (typeof value !== 'number' || !(value >= min) || !(Number.isInteger(value) || value === Infinity)) {
    refuse(where, option, `a whole number >= ${min} (or Infinity for no bound)`, value);
  }
}

/** A callback the caller must give. */
export function checkFunction(where: string, option: string, value: unknown): void {
  if (typeof value !== 'function') throw new TypeError(`${where}: ${option} must be a function, got ${shown(value)}`);
}

/** A callback the caller may leave out. */
export function checkOptionalFunction(where: string, option: string, value: unknown): void {
  if (value !== undefined) checkFunction(where, option, value);
}
