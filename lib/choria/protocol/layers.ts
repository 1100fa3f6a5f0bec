import { ValidateFunction } from 'ajv';
import { JsonBounds, parseJsonObject } from '../../untrustedJson';
import { ProtocolError, ProtocolErrorReason } from './protocolError';
import { ENVELOPE_BOUNDS } from './bounds';
import { decodeBase64Strict } from './encoding';
import { schemaErrors } from './schemas';
import { Decoded } from './types';

/** A refusal, as a {@link Decoded} value. */
export function refuse<T>(reason: ProtocolErrorReason, layer: string, message: string): Decoded<T> {
  return { ok: false, error: new ProtocolError(reason, layer, message) };
}

/**
 * `JSON.parse` of untrusted text that must be a JSON object within `bounds` (default: an envelope
 * layer's, {@link ENVELOPE_BOUNDS}); never throws. What cannot be such an object is refused before
 * anything is built (`lib/untrustedJson.ts`): `not_json`, `schema` (not a JSON object), or
 * `oversized` (nested deeper, or holding more arrays and objects, than the layer can).
 */
export function parsePlainJson(text: string, layer: string, bounds: JsonBounds = ENVELOPE_BOUNDS): Decoded<Record<string, unknown>> {
  const parsed = parseJsonObject(text, bounds);
  if (parsed.ok) return parsed;
  const { kind, message } = parsed.refusal;
  return refuse(kind === 'not_object' ? 'schema' : kind === 'not_json' ? 'not_json' : 'oversized', layer, message);
}

/**
 * Parses one layer's JSON text, checks its `protocol` before anything else (so a message of the
 * other version or of another kind is refused as such, not as a schema failure), then its schema.
 */
export function parseLayer<T extends { protocol: string }>(
  text: string,
  layer: string,
  protocol: string,
  validate: ValidateFunction<T>,
): Decoded<T> {
  const parsed = parsePlainJson(text, layer);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  const found = value.protocol;
  if (found !== protocol) return refuse('protocol', layer, `expected protocol ${protocol}, got ${JSON.stringify(found)?.slice(0, 80)}`);
  if (!validate(value)) return refuse('schema', layer, schemaErrors(validate));
  return { ok: true, value };
}

/** Strict base64 of a field, as UTF-8 text. */
export function base64Field(text: string, layer: string, field: string): Decoded<string> {
  const bytes = decodeBase64Strict(text);
  return bytes === undefined ? refuse('base64', layer, `${field} is not valid base64`) : { ok: true, value: bytes.toString('utf8') };
}

/**
 * go-choria servers accept an agent payload, v1 or v2, either raw or base64 (they try base64 and
 * ignore its failure): the same here, so a payload decodes exactly as a real server would read it.
 */
export function lenientBase64(text: string): string {
  return decodeBase64Strict(text)?.toString('utf8') ?? text;
}
