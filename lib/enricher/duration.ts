/**
 * Durations as people write them in configuration: `250ms`, `10s`, `5m`, `6h`, `1h30m`, or `0`.
 * A bare number other than 0 is refused: `read_timeout: 10` would otherwise be ten milliseconds
 * to someone who meant seconds.
 */

/** The pattern a duration string matches (also used by the configuration schema). */
export const DURATION_PATTERN = '^(0|([0-9]+(\\.[0-9]+)?(ms|s|m|h))+)$';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g;

/** Milliseconds in `value` (a duration string or the number 0); throws a one-line error otherwise. */
export function parseDuration(value: string | number): number {
  if (value === 0 || value === '0') return 0;
  if (typeof value !== 'string' || !new RegExp(DURATION_PATTERN).test(value)) {
    throw new RangeError(`expected a duration such as 250ms, 10s, 5m or 6h, got ${JSON.stringify(value)}`);
  }
  let ms = 0;
  for (const [, amount, unit] of value.matchAll(PART)) ms += Number(amount) * UNIT_MS[unit];
  return Math.round(ms);
}

/** `ms` written back as the shortest exact duration string (`6h`, `1m30s`, `250ms`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  let rest = ms;
  let out = '';
  for (const unit of ['h', 'm', 's', 'ms']) {
    const size = UNIT_MS[unit];
    const whole = Math.floor(rest / size);
    if (whole > 0) {
      out += `${whole}${unit}`;
      rest -= whole * size;
    }
  }
  return out;
}
