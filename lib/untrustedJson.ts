/**
 * JSON from outside (a NATS payload, a websocket frame), judged before it is built.
 *
 * `JSON.parse` builds everything it reads before its caller can look: 300 KB of nested arrays
 * costs it tens of milliseconds and as much garbage, only for the caller to learn that no Choria
 * message or Incus event looks like that. A Go decoder refuses such input on its first bytes, or
 * at its depth limit. {@link parseJsonObject} does the same: one pass over the text, jumping over
 * strings with a native search, refuses what cannot be an object within the bounds before
 * `JSON.parse` is called, so refusing junk costs about what reading its bytes costs, and nothing
 * is left to collect but the text itself.
 */

/** How much structure a kind of message can have. */
export interface JsonBounds {
  /** Arrays and objects nested deeper than this are refused (the root object is level 1). */
  readonly maxDepth: number;
  /** More arrays and objects than this, in all, are refused. */
  readonly maxContainers: number;
}

/** Why untrusted text was refused: never a quote of the text, which may hold a secret. */
export interface JsonRefusal {
  /**
   * `not_json`: not valid JSON; `not_object`: it cannot be a JSON object (it begins as another
   * value does); `too_deep` and `too_many`: beyond the bounds.
   */
  readonly kind: 'not_json' | 'not_object' | 'too_deep' | 'too_many';
  readonly message: string;
}

/** The text as an object, or why not. */
export type ParsedJsonObject = { ok: true; value: Record<string, unknown> } | { ok: false; refusal: JsonRefusal };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

const isWhitespace = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** Whether a JSON string, number, `true`, `false` or `null` can begin with this character. */
const beginsScalar = (c: number): boolean =>
  c === QUOTE || c === 0x2d || (c >= 0x30 && c <= 0x39) || c === 0x74 || c === 0x66 || c === 0x6e;

const notJson = (position: number): JsonRefusal => ({ kind: 'not_json', message: `not valid JSON (at position ${position})` });
const NOT_OBJECT: JsonRefusal = { kind: 'not_object', message: 'not a JSON object' };

/**
 * Text that does not begin with `{` (trimmed, from `start`): `not_object` when it is another JSON
 * value, else `not_json`. An array is refused as not an object whatever follows its `[`: finding
 * out would mean building it. A first character no value begins with is not JSON. Any other value
 * is a string, a number or a literal, one allocation at most, so `JSON.parse` says which.
 */
function notAnObject(text: string, start: number): JsonRefusal {
  const first = text.charCodeAt(start);
  if (first === OPEN_ARRAY) return NOT_OBJECT;
  if (!beginsScalar(first)) return notJson(start);
  const parsed = quietParse(text);
  return parsed.ok ? NOT_OBJECT : parsed.refusal;
}

/**
 * `JSON.parse` whose syntax error costs no stack trace: a refusal is counted by its reason and
 * never traced, and capturing the stack is most of what throwing costs (a flood is all throws).
 */
function quietParse(text: string): { ok: true; value: unknown } | { ok: false; refusal: JsonRefusal } {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, refusal: syntaxError(error) };
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/** V8 quotes the offending text in its message; that text may hold a token, so only the position is kept. */
function syntaxError(error: unknown): JsonRefusal {
  const position = /position (\d+)/.exec((error as Error).message)?.[1];
  return { kind: 'not_json', message: `not valid JSON${position === undefined ? '' : ` (at position ${position})`}` };
}

/** Where the string opened just before `from` closes, or -1 if it never does. */
function closingQuote(text: string, from: number): number {
  for (let at = from; ;) {
    const quote = text.indexOf('"', at);
    if (quote < 0) return -1;
    let backslashes = 0;
    for (let k = quote - 1; k >= at && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/**
 * Decides, without building anything, whether `text` may be a JSON object within `bounds`:
 * `undefined` when it may (`JSON.parse` has the last word on the syntax), else why it cannot.
 *
 * - Its first character (after JSON whitespace) must open an object, else it is refused as
 *   `not_object` when it is another value (`[1,2]`, `"x"`, `42`) and as `not_json` otherwise. Its
 *   last character must close an object.
 * - Arrays and objects outside strings are counted and their nesting measured, strings skipped
 *   with `indexOf`; the pass stops at the first container past a bound, so a megabyte of `[` costs
 *   as much as the bound, not the megabyte.
 *
 * Exact for JSON: every valid object within the bounds passes. Never throws.
 */
export function screenJsonObject(text: string, bounds: JsonBounds): JsonRefusal | undefined {
  let start = 0;
  let end = text.length - 1;
  while (start <= end && isWhitespace(text.charCodeAt(start))) start++;
  while (end >= start && isWhitespace(text.charCodeAt(end))) end--;
  if (start > end) return notJson(start);
  if (text.charCodeAt(start) !== OPEN_OBJECT) return notAnObject(text, start);
  if (text.charCodeAt(end) !== CLOSE_OBJECT) return notJson(end);
  // Each array or object takes a character: text this short cannot pass either bound.
  const length = end - start + 1;
  if (length <= bounds.maxDepth && length <= bounds.maxContainers) return undefined;
  let depth = 0;
  let containers = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i + 1);
      if (i < 0) return notJson(text.length);
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (++depth > bounds.maxDepth) return { kind: 'too_deep', message: `nested deeper than ${bounds.maxDepth} levels` };
      if (++containers > bounds.maxContainers) return { kind: 'too_many', message: `more than ${bounds.maxContainers} arrays and objects` };
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    }
  }
  return undefined;
}

/**
 * `JSON.parse` of untrusted text that must be a JSON object within `bounds`, screened first
 * ({@link screenJsonObject}). Never throws; a refusal never quotes the text (V8's syntax errors do,
 * and the text may hold a token: only the position is kept).
 */
export function parseJsonObject(text: string, bounds: JsonBounds): ParsedJsonObject {
  const screened = screenJsonObject(text, bounds);
  if (screened !== undefined) return { ok: false, refusal: screened };
  const parsed = quietParse(text);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  // The screen saw `{` first and `}` last, so a value that parsed is an object; kept for the type.
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, refusal: NOT_OBJECT };
  return { ok: true, value: value as Record<string, unknown> };
}
