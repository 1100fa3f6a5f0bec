/**
 * The other end of {@link toPayload}: a message a consumer received (from NATS, or a JSON line)
 * back into an {@link EventPayload}, checked against {@link EVENT_PAYLOAD_SCHEMA}.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { EVENT_PAYLOAD_SCHEMA, EventPayload, PAYLOAD_VERSION } from './payload';

/** Payloads larger than this are refused unread (the enricher's are a few KiB). */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;

/** A decoded payload, or why the message is not one. */
export type DecodedPayload = { readonly ok: true; readonly value: EventPayload } | { readonly ok: false; readonly reason: string };

const ajv = new Ajv2020({ allErrors: false, strict: true });
addFormats(ajv);
const validate = ajv.compile<EventPayload>(EVENT_PAYLOAD_SCHEMA);
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Decodes one message: UTF-8 JSON, at most {@link MAX_PAYLOAD_BYTES}, valid against the payload's
 * schema (version 1). Never throws; the reason names what was wrong, never the content (a payload
 * may carry an instance's configuration).
 */
export function decodeEventPayload(data: Uint8Array, maxBytes = MAX_PAYLOAD_BYTES): DecodedPayload {
  if (data.length > maxBytes) return { ok: false, reason: `${data.length} bytes, more than ${maxBytes}` };
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(data));
  } catch {
    return { ok: false, reason: 'not UTF-8 JSON' };
  }
  if (!validate(parsed)) {
    const first = validate.errors?.[0];
    return {
      ok: false,
      reason: `not an enriched event (version ${PAYLOAD_VERSION}): ${first === undefined ? 'invalid' : `${first.instancePath || '/'} ${first.message ?? 'invalid'}`}`,
    };
  }
  return { ok: true, value: parsed };
}
