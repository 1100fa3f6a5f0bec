import fc from 'fast-check';
import { JsonBounds, parseJsonObject, screenJsonObject } from '../../lib/untrustedJson';

const LOOSE: JsonBounds = { maxDepth: Number.POSITIVE_INFINITY, maxContainers: Number.POSITIVE_INFINITY };

/** The nesting depth and the number of arrays and objects of a parsed value. */
function shape(value: unknown): { depth: number; containers: number } {
  if (typeof value !== 'object' || value === null) return { depth: 0, containers: 0 };
  const children = (Array.isArray(value) ? value : Object.values(value)).map(shape);
  return {
    depth: 1 + Math.max(0, ...children.map((c) => c.depth)),
    containers: 1 + children.reduce((sum, c) => sum + c.containers, 0),
  };
}

const objects = fc.oneof(
  fc.object(),
  fc.dictionary(fc.string(), fc.jsonValue()),
  fc.record({ s: fc.string({ unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', 'a', ' ') }), n: fc.jsonValue() }),
);

describe('parseJsonObject', () => {
  it('accepts every JSON object within its bounds, exactly as JSON.parse reads it', () => {
    fc.assert(
      fc.property(objects, fc.boolean(), (value, pretty) => {
        const text = pretty ? `\n ${JSON.stringify(value, null, 2)}\t\r\n` : JSON.stringify(value);
        const { depth, containers } = shape(value);
        const parsed = parseJsonObject(text, { maxDepth: depth, maxContainers: containers });
        expect(parsed).toEqual({ ok: true, value: JSON.parse(text) });
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses an object one level deeper, or with one container more, than its bounds allow', () => {
    fc.assert(
      fc.property(objects, (value) => {
        const text = JSON.stringify(value);
        const { depth, containers } = shape(value);
        expect(screenJsonObject(text, { maxDepth: depth - 1, maxContainers: containers })?.kind).toBe('too_deep');
        expect(screenJsonObject(text, { maxDepth: depth, maxContainers: containers - 1 })?.kind).toBe('too_many');
      }),
      { numRuns: 500 },
    );
  });

  it('agrees with JSON.parse on what is an object, on any text, and never throws', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.json(), fc.string({ unit: fc.constantFrom('{', '}', '[', ']', '"', '\\', ':', ',', '1', 'a', ' ') })),
        (text) => {
          let expected: unknown;
          try {
            expected = JSON.parse(text);
          } catch {
            expected = undefined;
          }
          const isObject = typeof expected === 'object' && expected !== null && !Array.isArray(expected);
          const parsed = parseJsonObject(text, LOOSE);
          expect(parsed.ok).toBe(isObject);
          if (parsed.ok) expect(parsed.value).toEqual(expected);
          // An array is not an object whether or not the rest parses: the one case decided on its first byte.
          else if (expected === undefined)
            expect(parsed.refusal.kind).toBe(text.replace(/^[ \t\n\r]+/, '').startsWith('[') ? 'not_object' : 'not_json');
          else expect(parsed.refusal.kind).toBe('not_object');
        },
      ),
      { numRuns: 2000 },
    );
  });

  it.each([
    ['an array', '[1,2]', 'not_object'],
    ['an array that does not parse', '[[[[', 'not_object'],
    ['a string', ' "lifecycle" ', 'not_object'],
    ['a number', '-1.5e3', 'not_object'],
    ['a literal', 'null', 'not_object'],
    ['a word that is no literal', 'not json', 'not_json'],
    ['a number followed by more', '42 43', 'not_json'],
    ['an unterminated string', '"abc', 'not_json'],
    ['nothing', '  \n', 'not_json'],
    ['an object cut short', '{"protocol":"choria:transport:1","data":', 'not_json'],
    ['an object whose last string never closes', '{"a":"}', 'not_json'],
    ['a byte-order mark before the object', '\uFEFF{}', 'not_json'],
  ])('refuses %s (%j) as %s', (_what, text, kind) => {
    const parsed = parseJsonObject(text, LOOSE);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.refusal.kind).toBe(kind);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const text = JSON.stringify({ a: '[[[[{{{{ \\" ]]] "' + '['.repeat(100), b: '\\' });
    expect(parseJsonObject(text, { maxDepth: 1, maxContainers: 1 })).toEqual({ ok: true, value: JSON.parse(text) });
  });

  it('refuses nesting past the bound however deep it goes, and a flood of containers however flat', () => {
    const deep = `{"a":${'['.repeat(150_000)}${']'.repeat(150_000)}}`;
    expect(parseJsonObject(deep, { maxDepth: 32, maxContainers: 1024 })).toEqual({
      ok: false,
      refusal: { kind: 'too_deep', message: 'nested deeper than 32 levels' },
    });
    const wide = `{"a":[${Array(100_000).fill('[]').join(',')}]}`;
    expect(parseJsonObject(wide, { maxDepth: 32, maxContainers: 1024 })).toEqual({
      ok: false,
      refusal: { kind: 'too_many', message: 'more than 1024 arrays and objects' },
    });
  });

  it('never quotes the text it refuses', () => {
    for (const text of ['{"token": s3cret}', 's3cret', '{"a":"s3cret"', `{"s3cret":${'['.repeat(10)}}`]) {
      const parsed = parseJsonObject(text, { maxDepth: 4, maxContainers: 4 });
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.refusal.message).not.toContain('s3cret');
    }
  });
});
