import { ValidateFunction } from 'ajv';
import { ProtocolError, ProtocolErrorReason } from '../errors';
import { decodeBase64Strict } from './encoding';
import { schemaErrors } from './schemas';
import { Decoded } from './types';

/** A refusal, as a {@link Decoded} value. */
export function refuse<T>(reason: ProtocolErrorReason, layer: string, message: string): Decoded<T> {
  return { ok: false, error: new ProtocolError(reason, layer, message) };
}

/** `JSON.parse` of untrusted text that must be a JSON object; never throws. */
export function parsePlainJson(text: string, layer: string): Decoded<Record<string, unknown>> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    // V8 quotes the offending text in its message; that text may hold a token, so only the position is kept.
    const position = /position (\d+)/.exec((error as Error).message)?.[1];
    return refuse('not_json', layer, `not valid JSON${position === undefined ? '' : ` (at position ${position})`}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return refuse('schema', layer, 'not a JSON object');
  return { ok: true, value: value as Record<string, unknown> };
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
