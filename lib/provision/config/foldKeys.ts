/**
 * The file's keys as upstream reads them, before the schema sees them: Go's JSON decoding matches
 * keys in any case and leaves a default for a key set to null, and a few values people write are
 * read as what they mean.
 */
import { editDistance } from '../../configProblems';
import { DEPRECATED_KEYS, SECTION_KEYS } from './configSchema';

/** Whether a parsed YAML value is a mapping of keys to values. */
export function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The document with every key in its canonical spelling, in each section (`features`, `rxfleet`,
 * `rxfleet.incus`): unknown keys, keys given twice, deprecated keys and an empty `incus:` are
 * warned about; `failure_backoff: 0` becomes the duration "0" and a single server a list of one.
 */
export function foldKeys(raw: Record<string, unknown>, warn: (path: string, message: string) => void): Record<string, unknown> {
  const folded = foldSection(raw, '', warn);
  // `incus:` left empty is null, which keeps the default (no feed) like any key: say so, since the
  // section's whole point is turning the feed on.
  if (isMapping(folded.rxfleet) && Object.entries(folded.rxfleet).some(([key, value]) => key.toLowerCase() === 'incus' && value === null)) {
    warn('rxfleet.incus', 'empty, so the Incus feed is off: write `incus: {}` to turn it on with every default');
  }
  for (const section of ['features', 'rxfleet'] as const) {
    if (isMapping(folded[section])) folded[section] = foldSection(folded[section], section, warn);
  }
  if (isMapping(folded.rxfleet) && isMapping(folded.rxfleet.incus))
    folded.rxfleet.incus = foldSection(folded.rxfleet.incus, 'rxfleet.incus', warn);
  for (const key of Object.keys(DEPRECATED_KEYS)) {
    if (key in folded) warn(key, `deprecated: ${DEPRECATED_KEYS[key]}`);
  }
  // `failure_backoff: 0` (a number) is the off switch people write: read it as the duration "0".
  if (isMapping(folded.rxfleet)) {
    for (const [key, value] of Object.entries(folded.rxfleet)) if (key === 'failure_backoff' && value === 0) folded.rxfleet[key] = '0';
  }
  // A single server is as good as a list of one.
  for (const key of ['nats_servers', 'dns_servers']) {
    if (isMapping(folded.rxfleet) && typeof folded.rxfleet[key] === 'string') {
      folded.rxfleet[key] = folded.rxfleet[key]
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
    }
  }
  return folded;
}

/**
 * Maps each key to its canonical spelling case-insensitively (Go's JSON rule: the last of two
 * spellings wins), drops keys set to null (Go leaves the default) and warns about unknown keys.
 */
function foldSection(
  section: Record<string, unknown>,
  prefix: keyof typeof SECTION_KEYS,
  warn: (path: string, message: string) => void,
): Record<string, unknown> {
  const known = SECTION_KEYS[prefix];
  const at = (key: string): string => (prefix === '' ? key : `${prefix}.${key}`);
  const out: Record<string, unknown> = {};
  const spelledAs = new Map<string, string>();
  for (const [key, value] of Object.entries(section)) {
    const canonical = known.find((k) => k === key) ?? known.find((k) => k.toLowerCase() === key.toLowerCase());
    if (canonical === undefined) {
      const hint = known.find((k) => editDistance(k, key.toLowerCase()) <= 2);
      warn(at(key), `unknown key, ignored${hint === undefined ? '' : ` (did you mean ${at(hint)}?)`}`);
      continue;
    }
    const earlier = spelledAs.get(canonical);
    if (earlier !== undefined) warn(at(canonical), `given twice (as ${earlier} and ${key}); the last one wins`);
    spelledAs.set(canonical, key);
    if (value === null) delete out[canonical];
    else out[canonical] = value;
  }
  return out;
}
