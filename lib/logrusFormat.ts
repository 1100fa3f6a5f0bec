/**
 * The two forms logrus writes, for sites whose log parsing was written against the Go provisioner.
 * Its TextFormatter (full timestamps, no colours), what it writes to a terminal or stdout:
 *
 *     time="2026-12-01T08:00:00Z" level=info msg="Provisioned n1.example.net" identity=n1.example.net
 *
 * `time`, `level` and `msg` come first, then every other field sorted by key, as logrus sorts them.
 * A value is quoted (Go's `%q`) only when it holds a character outside `[A-Za-z0-9-._/@^+]`, as
 * logrus's `needsQuoting`; an empty value is written bare (`key=`). Levels are logrus's names
 * (`warning`, not `warn`). pino's `pid` and `hostname` are left out (logrus has neither); pino's
 * serialised `err` becomes logrus's `error` field with the error's message.
 *
 * And its JSONFormatter ({@link logrusJsonLine}), what go-choria writes to a `logfile`.
 */

const LEVEL_NAMES: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warning', 50: 'error', 60: 'fatal' };
const DROPPED = new Set(['time', 'level', 'msg', 'pid', 'hostname', 'err', 'v']);

/** logrus's `needsQuoting`: anything beyond letters, digits and `-._/@^+`. */
function needsQuoting(text: string): boolean {
  return !/^[A-Za-z0-9\-._/@^+]*$/.test(text);
}

const GO_ESCAPES: Record<string, string> = {
  '\x07': '\\a',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\v': '\\v',
  '"': '\\"',
  '\\': '\\\\',
};

/** Go's `strconv.Quote` for the text a log line carries: control characters escaped, printable Unicode kept. */
export function goQuote(text: string): string {
  let out = '"';
  for (const ch of text) {
    const escaped = GO_ESCAPES[ch];
    const code = ch.codePointAt(0) as number;
    if (escaped !== undefined) out += escaped;
    else if (code < 0x20 || code === 0x7f) out += `\\x${code.toString(16).padStart(2, '0')}`;
    else if ((code >= 0x80 && code < 0xa0) || code === 0x2028 || code === 0x2029) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '<nil>';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

function pair(key: string, value: unknown): string {
  const text = valueText(value);
  return `${key}=${needsQuoting(text) ? goQuote(text) : text}`;
}

/**
 * RFC 3339 in the machine's local time to the second, as Go's `time.RFC3339` prints it: `Z` for
 * UTC, otherwise the offset (`2026-12-01T09:00:00+01:00`).
 */
export function rfc3339(epochMs: number, offsetMinutes = -new Date(epochMs).getTimezoneOffset()): string {
  const local = new Date(epochMs + offsetMinutes * 60_000).toISOString().slice(0, 19);
  if (offsetMinutes === 0) return `${local}Z`;
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  return `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}

/** One pino record (a parsed JSON line) as the line logrus would write, without its newline. */
export function logrusLine(record: Record<string, unknown>, offsetMinutes?: number): string {
  const parts: string[] = [];
  if (typeof record.time === 'number') parts.push(pair('time', rfc3339(record.time, offsetMinutes)));
  parts.push(`level=${typeof record.level === 'number' ? (LEVEL_NAMES[record.level] ?? String(record.level)) : valueText(record.level)}`);
  parts.push(pair('msg', record.msg ?? ''));
  const fields: Array<[string, unknown]> = Object.entries(record).filter(([key, value]) => !DROPPED.has(key) && value !== undefined);
  const err = record.err as { message?: unknown } | undefined;
  if (err !== undefined && err !== null) fields.push(['error', typeof err === 'object' && 'message' in err ? err.message : err]);
  fields.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [key, value] of fields) parts.push(pair(key, value));
  return parts.join(' ');
}

/** Go's `json.Marshal` escapes these inside strings (HTML safety), where `JSON.stringify` does not. */
const GO_JSON_ESCAPES: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** The fields logrus's JSONFormatter writes itself, whose namesakes in the data it renames `fields.<name>`. */
const LOGRUS_OWN = new Set(['time', 'msg', 'level', 'logrus_error']);

/**
 * One pino record as the line go-choria's log file gets (logrus's JSONFormatter, which
 * `CommonLogOpener` sets whenever `logfile` names a file): one JSON object whose keys are in Go's
 * map order (sorted), `level` by logrus's name (`warning`, not pino's 40), `msg`, `time` in RFC 3339
 * in the machine's local time to the second, every other field beside them; pino's `pid`,
 * `hostname` and `v` left out, its `err` as logrus's `error` (the message), and a field named
 * like one of logrus's own kept as `fields.<name>`, as logrus keeps it. `<`, `>` and `&` are
 * escaped inside strings, as Go's encoder does. Without its newline.
 */
export function logrusJsonLine(record: Record<string, unknown>, offsetMinutes?: number): string {
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(record)) {
    if (value === undefined || ['time', 'level', 'msg', 'pid', 'hostname', 'err', 'v'].includes(key)) continue;
    data[key] = value;
  }
  const err = record.err as { message?: unknown } | undefined;
  if (err !== undefined && err !== null) data.error = typeof err === 'object' && 'message' in err ? err.message : err;
  for (const key of Object.keys(data)) {
    if (!LOGRUS_OWN.has(key)) continue;
    data[`fields.${key}`] = data[key];
    delete data[key];
  }
  if (typeof record.time === 'number') data.time = rfc3339(record.time, offsetMinutes);
  data.msg = record.msg ?? '';
  data.level = typeof record.level === 'number' ? (LEVEL_NAMES[record.level] ?? String(record.level)) : valueText(record.level);
  const sorted = Object.fromEntries(Object.entries(data).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  return JSON.stringify(sorted).replace(/[<>&\u2028\u2029]/g, (ch) => GO_JSON_ESCAPES[ch] as string);
}
