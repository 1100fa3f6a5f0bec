import { Rng } from './random';

/** Values that break assumptions: wrong types, extremes, deep nesting, huge strings. */
export function oddValue(rng: Rng, depth = 0): unknown {
  switch (rng.int(0, 15)) {
    case 0:
      return null;
    case 1:
      return rng.bool();
    case 2:
      return rng.pick([0, -1, 1.5, 2 ** 53, -(2 ** 63), Number.MAX_VALUE, 1e308, -0]);
    case 3:
      return rng.text();
    case 4:
      return '';
    case 5:
      return 'x'.repeat(rng.pick([1024, 70_000, 1_100_000]));
    case 6:
      return depth > 3 ? [] : Array.from({ length: rng.int(0, 4) }, () => oddValue(rng, depth + 1));
    case 7:
      return depth > 3
        ? {}
        : Object.fromEntries(
            Array.from({ length: rng.int(0, 4) }, () => [
              rng.pick(['__proto__', 'constructor', 'toString', rng.text(8), 'data', 'protocol', 'metadata'])!,
              oddValue(rng, depth + 1),
            ]),
          );
    case 8: {
      // Nested deeper than any parser's comfort.
      let v: unknown = 1;
      for (let i = 0, n = rng.pick([50, 300, 1000]); i < n; i++) v = rng.bool() ? [v] : { a: v };
      return v;
    }
    case 9:
      return rng.pick([
        'NaN',
        'Infinity',
        'true',
        'null',
        '0x10',
        '1e999',
        '-',
        '.',
        '*',
        '>',
        'choria:transport:1',
        'io.choria.protocol.v2.reply',
      ]);
    case 10:
      return Buffer.from(rng.text(32), 'utf8').toString('base64');
    case 11:
      return rng.pick(['2026-01-01T00:00:00Z', '1970-01-01', '9999-12-31T23:59:59.999999999Z']);
    default:
      return rng.int(-5, 5);
  }
}

/** A mutated copy of a parsed JSON value: one node replaced, removed, added to or retyped. */
export function mutateJson(rng: Rng, value: unknown): unknown {
  if (value === null || typeof value !== 'object' || rng.bool(0.15)) return oddValue(rng);
  const copy: Record<string, unknown> | unknown[] = Array.isArray(value) ? [...value] : { ...(value as Record<string, unknown>) };
  const keys = Object.keys(copy);
  const action = rng.int(0, 4);
  if (keys.length === 0 || action === 0) {
    const key = Array.isArray(copy) ? String(copy.length) : rng.pick(['extra', 'protocol', 'data', 'metadata', '__proto__', rng.text(6)]);
    (copy as Record<string, unknown>)[key] = oddValue(rng);
    return copy;
  }
  const key = rng.pick(keys);
  if (action === 1) {
    if (Array.isArray(copy)) copy.splice(Number(key), 1);
    else delete copy[key];
  } else if (action === 2) {
    (copy as Record<string, unknown>)[key] = oddValue(rng);
  } else {
    (copy as Record<string, unknown>)[key] = mutateJson(rng, (copy as Record<string, unknown>)[key]);
  }
  return copy;
}

/** A byte- and character-level mutation of a text: flips, cuts, insertions, repeats. */
export function mutateText(rng: Rng, text: string): string {
  let out = text;
  for (let i = 0, n = rng.int(1, 4); i < n; i++) {
    const at = rng.int(0, out.length);
    switch (rng.int(0, 6)) {
      case 0:
        out = out.slice(0, at);
        break;
      case 1:
        out = out.slice(0, at) + rng.text(8) + out.slice(at);
        break;
      case 2:
        out = out.slice(0, at) + out.slice(at + rng.int(1, 16));
        break;
      case 3:
        out = out.slice(0, at) + String.fromCharCode(out.charCodeAt(at) ^ (1 << rng.int(0, 7))) + out.slice(at + 1);
        break;
      case 4:
        out = out.slice(0, at) + out.slice(at, at + rng.int(1, 32)).repeat(rng.int(2, 50)) + out.slice(at);
        break;
      case 5:
        out =
          out.slice(0, at) +
          rng.pick([
            '\u0000',
            '\ufffd',
            '"',
            '\\u0000',
            '}',
            ']',
            '\n',
            '=',
            ':',
            '*',
            '&a ',
            '<<: ',
            '!!binary ',
            '%YAML 1.1\n',
            '---\n',
          ]) +
          out.slice(at);
        break;
      default:
        out = rng.text(64);
    }
  }
  return out;
}

/** A JSON text mutated at the JSON level (usually) or the text level. */
export function mutateJsonText(rng: Rng, text: string): string {
  if (rng.bool(0.3)) return mutateText(rng, text);
  try {
    return JSON.stringify(mutateJson(rng, JSON.parse(text))) ?? 'null';
  } catch {
    return mutateText(rng, text);
  }
}
