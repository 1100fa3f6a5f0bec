/**
 * RPM-style versions, `[epoch:]version[-release]`, compared as upstream's `host/version.go` (a copy
 * of go-rpm-version) does: epochs numerically, then version and release with `rpmvercmp`.
 */

/** A parsed `[epoch:]version[-release]`. */
export interface RpmVersion {
  epoch: number;
  version: string;
  release: string;
}

/**
 * Splits at the first `:` (an epoch that is not a whole number counts as 0, as upstream) and then
 * at the first `-` of the rest. Never throws.
 */
export function parseRpmVersion(text: string): RpmVersion {
  let rest = text;
  let epoch = 0;
  const colon = text.indexOf(':');
  if (colon >= 0) {
    const e = text.slice(0, colon).trimStart();
    epoch = /^[+-]?\d+$/.test(e) ? Number(e) : 0;
    rest = text.slice(colon + 1);
  }
  const dash = rest.indexOf('-');
  return dash >= 0 ? { epoch, version: rest.slice(0, dash), release: rest.slice(dash + 1) } : { epoch, version: rest, release: '' };
}

const SEGMENT = /[a-zA-Z]+|[0-9]+|~/g;

/**
 * `rpmvercmp`: compares two version (or release) strings segment by segment, where a segment is a
 * run of letters, a run of digits, or a tilde. Other characters only separate. Numbers compare
 * numerically (leading zeros ignored) and beat letters; letters compare by code unit; a tilde sorts
 * before anything, even the end of the string; otherwise more segments win. Returns -1, 0 or 1.
 */
export function rpmvercmp(a: string, b: string): -1 | 0 | 1 {
  if (a === b) return 0;
  const segsA = a.match(SEGMENT) ?? [];
  const segsB = b.match(SEGMENT) ?? [];
  const common = Math.min(segsA.length, segsB.length);
  for (let i = 0; i < common; i++) {
    let x = segsA[i];
    let y = segsB[i];
    if (x[0] === '~' || y[0] === '~') {
      if (x[0] !== '~') return 1;
      if (y[0] !== '~') return -1;
    }
    const xNumeric = x[0] >= '0' && x[0] <= '9';
    const yNumeric = y[0] >= '0' && y[0] <= '9';
    if (xNumeric) {
      if (!yNumeric) return 1;
      x = x.replace(/^0+/, '');
      y = y.replace(/^0+/, '');
      if (x.length !== y.length) return x.length > y.length ? 1 : -1;
    } else if (yNumeric) {
      return -1;
    }
    if (x < y) return -1;
    if (x > y) return 1;
  }
  if (segsA.length === segsB.length) return 0;
  if (segsA.length > common && segsA[common][0] === '~') return -1;
  if (segsB.length > common && segsB[common][0] === '~') return 1;
  return segsA.length > segsB.length ? 1 : -1;
}

/** Compares two `[epoch:]version[-release]` strings: -1, 0 or 1. */
export function compareRpmVersions(a: string, b: string): -1 | 0 | 1 {
  const va = parseRpmVersion(a);
  const vb = parseRpmVersion(b);
  if (va.epoch !== vb.epoch) return va.epoch > vb.epoch ? 1 : -1;
  const byVersion = rpmvercmp(va.version, vb.version);
  if (byVersion !== 0) return byVersion;
  return rpmvercmp(va.release, vb.release);
}
