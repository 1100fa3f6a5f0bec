import { ProtocolError } from './protocolError';
import { utf8 } from './encoding';
import { parsePlainJson, refuse } from './layers';
import { schemaErrors } from './schemas';
import { ChoriaReply, ChoriaRequest, Decoded, ProtocolVersion, RequestFields } from './types';
import { TransportV1, V1, V1Signer, decodeReplyV1, decodeRequestV1, encodeReplyV1, encodeRequestV1, isTransportV1 } from './v1';
import { TransportV2, V2, V2Security, decodeReplyV2, decodeRequestV2, encodeReplyV2, encodeRequestV2, isTransportV2 } from './v2';

/** NATS's default `max_payload`: nothing larger can have come from a well-configured broker. */
export const DEFAULT_MAX_BYTES = 1024 * 1024;

/** Options for decoding untrusted bytes. */
export interface DecodeOptions {
  /** Larger messages are refused before parsing. Default 1 MiB. */
  maxBytes?: number;
}

/** Options for decoding a request (what a server does). */
export interface DecodeRequestOptions extends DecodeOptions {
  /** The clock the TTL is checked against, in ms. Default `Date.now()`. */
  now?: number;
  /** Refuse requests whose `time` is not within ±ttl of `now`, as a server does. Default true. */
  checkTtl?: boolean;
}

/** What an outgoing request is made of, whichever protocol carries it. */
export interface OutgoingRequest extends RequestFields {
  /**
   * How the payload goes into `message`, in either protocol: Go RPC clients send the JSON raw;
   * discovery sends base64 (`cGluZw==`). A server base64-decodes what it receives and keeps it raw
   * when that fails (go-choria's `SetBase64Payload`, its error ignored), so both reach the agent;
   * in v2 the base64 text is itself carried as bytes, base64 again on the wire, or a server would
   * decode `ping` as base64. Default `raw`.
   */
  payloadEncoding?: 'raw' | 'base64';
}

/**
 * The protocol to speak, and the caller's credentials: v1 signed with an x509 key (`signer`) or
 * unsigned, v2 with the caller's JWT and ed25519 seed.
 */
export type EncodeRequestOptions = { version: 'v1'; signer?: V1Signer } | { version: 'v2'; security: V2Security };

type Transport = { version: 'v1'; transport: TransportV1 } | { version: 'v2'; transport: TransportV2 };

function parseTransport(data: Uint8Array | string, maxBytes: number): Decoded<Transport> {
  const size = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
  if (size > maxBytes) return refuse('oversized', 'transport', `${size} bytes is more than ${maxBytes}`);
  const parsed = parsePlainJson(typeof data === 'string' ? data : utf8(data), 'transport');
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  const protocol = value.protocol;
  if (protocol === V1.transport) {
    return isTransportV1(value)
      ? { ok: true, value: { version: 'v1', transport: value } }
      : refuse('schema', 'transport', schemaErrors(isTransportV1));
  }
  if (protocol === V2.transport) {
    return isTransportV2(value)
      ? { ok: true, value: { version: 'v2', transport: value } }
      : refuse('schema', 'transport', schemaErrors(isTransportV2));
  }
  return refuse('protocol', 'transport', `unknown protocol ${JSON.stringify(protocol)?.slice(0, 80)}`);
}

/** Whether a request's `time` lies strictly within ±`ttl` seconds of `now` (ms), as go-choria's server checks. */
export function withinTtl(request: Pick<ChoriaRequest, 'time' | 'ttl'>, now: number): boolean {
  return request.time > now - request.ttl * 1000 && request.time < now + request.ttl * 1000;
}

/**
 * Decodes a request as a server receives it, v1 or v2 by its transport's `protocol`: every layer
 * parsed and validated against its schema, base64 strictly decoded, the TTL checked. Never throws:
 * a bad message comes back as `{ ok: false, error }` with the reason and the layer that refused it.
 */
export function decodeRequest(data: Uint8Array | string, options: DecodeRequestOptions = {}): Decoded<ChoriaRequest> {
  const { maxBytes = DEFAULT_MAX_BYTES, now = Date.now(), checkTtl = true } = options;
  const parsed = parseTransport(data, maxBytes);
  if (!parsed.ok) return parsed;
  const decoded = parsed.value.version === 'v1' ? decodeRequestV1(parsed.value.transport) : decodeRequestV2(parsed.value.transport);
  if (decoded.ok && checkTtl && !withinTtl(decoded.value, now)) {
    const skew = Math.round((decoded.value.time - now) / 1000);
    return {
      ok: false,
      error: new ProtocolError('stale', 'request', `time is ${skew} s from now, outside the ttl of ${decoded.value.ttl} s`),
    };
  }
  return decoded;
}

/**
 * Decodes a reply as a client receives it, v1 or v2: every layer validated and the secure reply's
 * hash checked against the reply it carries. Never throws.
 */
export function decodeReply(data: Uint8Array | string, options: DecodeOptions = {}): Decoded<ChoriaReply> {
  const parsed = parseTransport(data, options.maxBytes ?? DEFAULT_MAX_BYTES);
  if (!parsed.ok) return parsed;
  return parsed.value.version === 'v1' ? decodeReplyV1(parsed.value.transport) : decodeReplyV2(parsed.value.transport);
}

/** The NATS payload of a request in the chosen protocol. */
export function encodeRequest(request: OutgoingRequest, options: EncodeRequestOptions): string {
  const message = request.payloadEncoding === 'base64' ? Buffer.from(request.payload).toString('base64') : request.payload;
  const fields: RequestFields = { ...request, payload: message };
  return options.version === 'v2' ? encodeRequestV2(fields, options.security) : encodeRequestV1(fields, options.signer);
}

/**
 * The NATS payload of a reply in the chosen protocol (a server answers in the protocol it was asked
 * in). `seenBy`: the hops go-choria's connector records on what it publishes (`seen-by`), for a
 * server that answers as go-choria's does.
 */
export function encodeReply(reply: Omit<ChoriaReply, 'version' | 'sender'>, version: ProtocolVersion, seenBy?: string[][]): string {
  return version === 'v1' ? encodeReplyV1(reply, seenBy) : encodeReplyV2(reply, seenBy);
}
