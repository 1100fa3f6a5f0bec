/**
 * Byte sizes as a configuration writes them: a whole number of bytes, or a number with a unit
 * (`512MiB`, `1GB`, `10 GiB`): `B`, decimal `KB MB GB TB` and binary `KiB MiB GiB TiB`, any case.
 */

const UNITS: Record<string, number> = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
};

/** The pattern the configuration schema checks a size string with. */
export const BYTE_SIZE_PATTERN = '^[0-9]+(\\.[0-9]+)?\\s*([kKmMgGtT][iI]?)?[bB]$';

/** Bytes in `value`: a whole number as given, a string parsed with its unit. Throws a `RangeError` naming the value otherwise. */
export function parseByteSize(value: number | string): number {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`expected a whole number of bytes, got ${value}`);
    return value;
  }
  const match = /^([0-9]+(?:\.[0-9]+)?)\s*([kmgt]i?)?b$/i.exec(value.trim());
  if (match === null) throw new RangeError(`expected a size such as 512MiB or 1GB, got ${JSON.stringify(value)}`);
  return Math.round(Number(match[1]) * UNITS[`${(match[2] ?? '').toLowerCase()}b`]);
}

/** A size as a person reads it: `1 GiB`, `512 MiB`, `1.5 GB`, or bytes. */
export function formatByteSize(bytes: number): string {
  for (const [unit, size] of [
    ['TiB', 2 ** 40],
    ['GiB', 2 ** 30],
    ['MiB', 2 ** 20],
    ['KiB', 2 ** 10],
  ] as const) {
    if (bytes >= size && bytes % (size / 1024) === 0) return `${+(bytes / size).toFixed(2)} ${unit}`;
  }
  for (const [unit, size] of [
    ['TB', 1e12],
    ['GB', 1e9],
    ['MB', 1e6],
    ['KB', 1e3],
  ] as const) {
    if (bytes >= size) return `${+(bytes / size).toFixed(2)} ${unit}`;
  }
  return `${bytes} B`;
}
