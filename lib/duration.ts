/**
 * Go's `time.Duration` syntax (`300ms`, `1m30s`, `2h`), parsed and printed as Go does, in
 * milliseconds: the configuration of both daemons is written in it.
 */

/** A duration string that neither Go nor Choria would accept; the message is Go's. */
export class DurationSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurationSyntaxError';
  }
}

const NS_PER_UNIT: Record<string, number> = {
  ns: 1,
  us: 1e3,
  µs: 1e3, // U+00B5 micro sign
  μs: 1e3, // U+03BC Greek mu
  ms: 1e6,
  s: 1e9,
  m: 60e9,
  h: 3600e9,
};

/**
 * Go's `time.ParseDuration`, returning milliseconds: a sequence of decimal numbers, each with an
 * optional fraction and a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`), optionally signed; `"0"`
 * alone is zero. Throws {@link DurationSyntaxError} with Go's message otherwise.
 */
export function parseGoDuration(text: string): number {
  const quoted = JSON.stringify(text);
  let s = text;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-');
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '') throw new DurationSyntaxError(`time: invalid duration ${quoted}`);
  let totalNs = 0;
  while (s !== '') {
    const number = /^(\d*)(?:\.(\d*))?/.exec(s);
    const whole = number?.[1] ?? '';
    const fraction = number?.[2];
    if (whole === '' && (fraction === undefined || fraction === '')) throw new DurationSyntaxError(`time: invalid duration ${quoted}`);
    s = s.slice(number?.[0].length ?? 0);
    const unitMatch = /^[^\d.]*/.exec(s);
    const unit = unitMatch?.[0] ?? '';
    if (unit === '') throw new DurationSyntaxError(`time: missing unit in duration ${quoted}`);
    const scale = NS_PER_UNIT[unit];
    if (scale === undefined) throw new DurationSyntaxError(`time: unknown unit ${JSON.stringify(unit)} in duration ${quoted}`);
    s = s.slice(unit.length);
    totalNs += Number(`${whole || '0'}.${fraction ?? ''}0`) * scale;
    if (totalNs > 2 ** 63) throw new DurationSyntaxError(`time: invalid duration ${quoted}`);
  }
  const ms = totalNs / 1e6;
  return negative ? -ms : ms;
}

/**
 * Formats milliseconds the way Go prints a `time.Duration` (`1h2m3.5s`, `1m0s`, `1.5ms`, `0s`),
 * so messages such as "skipping node that's been waiting 2m3.5s" read as upstream's.
 */
export function formatGoDuration(ms: number): string {
  let ns = Math.round(ms * 1e6);
  if (ns === 0) return '0s';
  const sign = ns < 0 ? '-' : '';
  ns = Math.abs(ns);
  const fixed = (value: number, digits: number): string => {
    const whole = Math.floor(value / 10 ** digits);
    const fraction = String(value % 10 ** digits)
      .padStart(digits, '0')
      .replace(/0+$/, '');
    return fraction === '' ? String(whole) : `${whole}.${fraction}`;
  };
  if (ns < 1e3) return `${sign}${ns}ns`;
  if (ns < 1e6) return `${sign}${fixed(ns, 3)}µs`;
  if (ns < 1e9) return `${sign}${fixed(ns, 6)}ms`;
  const hours = Math.floor(ns / 3600e9);
  const minutes = Math.floor((ns % 3600e9) / 60e9);
  const seconds = fixed(ns % 60e9, 9);
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}
