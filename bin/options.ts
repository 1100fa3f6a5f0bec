import { InvalidArgumentError } from 'commander';

/** Parses a positive whole number option, refusing anything else with one clear line. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a positive whole number, got "${value}"`);
  return n;
}

/** Parses a whole number option that may be zero. */
export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a whole number >= 0, got "${value}"`);
  return n;
}

/** Parses a number between 0 and 1. */
export function fraction(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError(`expected a number from 0 to 1, got "${value}"`);
  return n;
}
