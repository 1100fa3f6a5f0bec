import { HelperInput, encodeHelperInput } from './helperInput';
import { HelperOutputError, HelperResponse, helperResponseFrom } from './helperResponse';

/**
 * The persistent helper's line protocol (`rxfleet.helper_mode: persistent`, DECISIONS P17): one
 * JSON object per line each way, the per-node contract's fields plus a request `id`.
 *
 * A request is the per-node helper input with `"id"` first: `{"id":"17","identity":"n1",...}\n`,
 * compact (no whitespace between tokens), UTF-8, keys always in this order (`id`, `identity`,
 * `csr`, `ed25519_pubkey`, `inventory`, `jwt`), so a helper with no JSON parser can take the id
 * and the identity apart with string operations. An answer is the per-node helper output with
 * `"id"`, the request's id as a string exactly as received, in any order relative to other answers.
 */

/**
 * The longest line accepted from a helper, bytes: the same cap as the per-node helper's output
 * (the kit's `LineSplitter` cuts the helper's stdout into lines under it).
 */
export const MAX_HELPER_LINE_BYTES = 16 * 1024 * 1024;

/** The request line for `input` under `id`, newline included. */
export function encodeHelperRequest(id: string, input: HelperInput): string {
  // The input object always starts `{"identity":`: the id goes in front of it, so it comes first.
  return `{"id":${JSON.stringify(id)},${encodeHelperInput(input).slice(1)}\n`;
}

/** What one line from a persistent helper is. */
export type HelperAnswer =
  /** An answer to request `id`, decoded as the per-node helper's output. */
  | { kind: 'answer'; id: string; response: HelperResponse }
  /** An answer to request `id` whose fields do not decode: that request fails, the helper is fine. */
  | { kind: 'undecodable'; id: string; error: HelperOutputError }
  /** Nothing but whitespace: ignored. */
  | { kind: 'blank' }
  /** Not an answer at all (not JSON, not an object, no string `id`): the helper cannot be trusted. */
  | { kind: 'violation'; reason: string };

/**
 * Reads one line a persistent helper wrote. Never throws: a line that cannot be tied to a request
 * is a `violation`, one tied to a request whose fields are wrong is `undecodable`.
 */
export function decodeHelperAnswer(line: string): HelperAnswer {
  if (line.trim() === '') return { kind: 'blank' };
  let document: unknown;
  try {
    document = JSON.parse(line);
  } catch (error) {
    return { kind: 'violation', reason: `not JSON (${(error as Error).message}): ${preview(line)}` };
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document))
    return { kind: 'violation', reason: `not a JSON object: ${preview(line)}` };
  const id = (document as { id?: unknown }).id;
  if (typeof id !== 'string') return { kind: 'violation', reason: `no string "id": ${preview(line)}` };
  try {
    return { kind: 'answer', id, response: helperResponseFrom(document) };
  } catch (error) {
    if (!(error instanceof HelperOutputError)) throw error;
    return { kind: 'undecodable', id, error };
  }
}

/** The start of a line for an error message: enough to recognise it, never a whole certificate. */
function preview(line: string): string {
  return JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}...` : line);
}
