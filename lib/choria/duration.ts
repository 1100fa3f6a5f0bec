/**
 * Durations as Choria writes them: Go's `time.ParseDuration` (`300ms`, `1m30s`, `2h`) extended by
 * go-choria's `ParseDuration` with a single trailing `d`/`D` (days), `w`/`W` (weeks), `M` (30 days)
 * or `y`/`Y` (365 days). Values are milliseconds (fractional below one millisecond).
 */
import { DurationSyntaxError, parseGoDuration } from '../duration';

const HOUR_MS = 3_600_000;

export { DurationSyntaxError, formatGoDuration, parseGoDuration } from '../duration';

const CHORIA_UNIT_HOURS: Record<string, number> = { w: 7 * 24, W: 7 * 24, d: 24, D: 24, M: 24 * 30, y: 24 * 365, Y: 24 * 365 };

/**
 * go-choria's `ParseDuration`: surrounding space is trimmed, an empty string is zero, a value
 * ending in `d`/`D`/`w`/`W`/`M`/`y`/`Y` is a (possibly fractional) count of that unit truncated to
 * whole hours, as Go does; a value ending in `s`/`m`/`h` is a Go duration. `H` and `S` end up in
 * Go's parser and fail there, exactly as upstream; any other last character is refused.
 */
export function parseChoriaDuration(text: string): number {
  const s = text.trim();
  if (s === '') return 0;
  const unit = s.slice(-1);
  const prefix = s.slice(0, -1);
  const hoursPerUnit = CHORIA_UNIT_HOURS[unit];
  if (hoursPerUnit !== undefined) {
    if (!/^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/.test(prefix)) {
      throw new DurationSyntaxError(`strconv.ParseFloat: parsing ${JSON.stringify(prefix)}: invalid syntax`);
    }
    // Go parses with bitSize 32, then converts value*hours to a whole number of hours.
    return Math.trunc(Math.fround(Number(prefix)) * hoursPerUnit) * HOUR_MS;
  }
  if ('sSmhH'.includes(unit)) return parseGoDuration(s);
  throw new DurationSyntaxError(`invalid time unit ${unit}`);
}
