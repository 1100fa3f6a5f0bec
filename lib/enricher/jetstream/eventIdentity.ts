/**
 * How an enriched event is named on JetStream: its `Nats-Msg-Id`, its instance's sequence header,
 * and its instance's key in the state bucket. Pure: the names are what makes a republished event
 * recognisable (the stream's duplicate window) and a missed one visible (the sequence).
 */

/** The header JetStream deduplicates on. */
export const MSG_ID_HEADER = 'Nats-Msg-Id';

/** The header carrying an instance event's sequence (also `instance_seq` in the payload). */
export const INSTANCE_SEQ_HEADER = 'Rxfleet-Instance-Seq';

/**
 * The state bucket's key holding how far the bucket is complete: every instance event the stream
 * holds up to that stream sequence is in the bucket. It has no dot, so no `<project>.<name>` key
 * is ever it.
 */
export const WATERMARK_KEY = 'rxfleet';

/** What an event is about, as its identity needs it. */
export interface EventSubject {
  readonly kind: string;
  readonly project: string;
  readonly name: string;
  readonly action: string;
  /** The server's timestamp of an Incus event, or when the enricher took the event in. */
  readonly stamp: string;
}

/** The in-memory key of an instance: `<project>/<name>` (neither may hold a `/`). */
export function instanceKey(project: string, name: string): string {
  return `${project}/${name}`;
}

/**
 * The `Nats-Msg-Id` of an event. An instance event is named by its instance and its sequence, so
 * whoever publishes it again (a retry, a restart, a standby taking over) names it the same;
 * `republish` > 0 names a deliberate second copy (the first was acknowledged as a duplicate but
 * is not in the stream: nats-server #6415). Any other event is named by its subject, action and
 * the server's timestamp, which no other event shares.
 */
export function messageId(subject: EventSubject, seq?: number, republish = 0): string {
  const base =
    seq === undefined
      ? `${subject.kind}/${subject.project}/${subject.name}/${subject.action}@${subject.stamp}`
      : `instance/${subject.project}/${subject.name}/${seq}`;
  return republish > 0 ? `${base}~${republish}` : base;
}

// KV keys allow [-/_=.A-Za-z0-9]; `.` separates the project from the name and `_` escapes.
const PLAIN = /^[A-Za-z0-9-]$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function escapeToken(value: string): string {
  let out = '';
  for (const char of value) {
    if (PLAIN.test(char)) out += char;
    else for (const byte of encoder.encode(char)) out += `_${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out === '' ? '_' : out;
}

function unescapeToken(token: string): string | undefined {
  if (token === '_') return '';
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    if (token[i] !== '_') {
      bytes.push(token.charCodeAt(i));
      continue;
    }
    const hex = token.slice(i + 1, i + 3);
    if (!/^[0-9A-F]{2}$/.test(hex)) return undefined;
    bytes.push(parseInt(hex, 16));
    i += 2;
  }
  try {
    return decoder.decode(new Uint8Array(bytes));
  } catch {
    return undefined;
  }
}

/**
 * The state bucket's key of an instance: `<project>.<name>`, each part with every character but
 * letters, digits and `-` written `_XX` (its UTF-8 bytes in hex), so any project or name is a
 * valid key and the dot always separates the two (`default.web1`, `my_2Eproj.web1`).
 */
export function stateKey(project: string, name: string): string {
  return `${escapeToken(project)}.${escapeToken(name)}`;
}

/** The project and name of a state bucket key, or `undefined` for a key that is not one (the watermark). */
export function parseStateKey(key: string): { project: string; name: string } | undefined {
  const parts = key.split('.');
  if (parts.length !== 2) return undefined;
  const project = unescapeToken(parts[0]);
  const name = unescapeToken(parts[1]);
  return project === undefined || name === undefined ? undefined : { project, name };
}

/** The payload's JSON with `instance_seq` added as its last field (the JSON is an object). */
export function withInstanceSeq(json: string, seq: number): string {
  return `${json.slice(0, -1)},"instance_seq":${seq}}`;
}
