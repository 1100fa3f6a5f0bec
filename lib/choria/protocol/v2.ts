import { decodeBase64Strict, sha256, sha256Base64, toBase64 } from './encoding';
import { base64Field, lenientBase64, parseLayer, refuse } from './layers';
import { compileSchema, replyV2Schema, requestV2Schema, secureReplyV2Schema, secureRequestV2Schema, transportV2Schema } from './schemas';
import { ChoriaReply, ChoriaRequest, Decoded, Filter, RequestFields, newFilter } from './types';
import { definedFields } from '../../definedFields';

/** The v2 protocol strings (`io.choria.protocol.v2.*`), spoken in organisation-issuer deployments. */
export const V2 = {
  transport: 'io.choria.protocol.v2.transport',
  secureRequest: 'io.choria.protocol.v2.secure_request',
  request: 'io.choria.protocol.v2.request',
  secureReply: 'io.choria.protocol.v2.secure_reply',
  reply: 'io.choria.protocol.v2.reply',
} as const;

export interface TransportV2 {
  protocol: typeof V2.transport;
  data: string;
  headers: { reply?: string; sender?: string; trace?: string[][]; federation?: { request?: string; reply?: string; targets?: string[] } };
}
interface SecureRequestV2 {
  protocol: typeof V2.secureRequest;
  request: string;
  signature: string;
  caller: string;
  signer?: string;
}
interface RequestV2 {
  protocol: typeof V2.request;
  message: string;
  id: string;
  sender: string;
  caller: string;
  collective: string;
  agent: string;
  ttl: number;
  time: number;
  filter?: Filter;
}
interface SecureReplyV2 {
  protocol: typeof V2.secureReply;
  reply: string;
  hash: string;
  signature?: string;
  sender?: string;
}
interface ReplyV2 {
  protocol: typeof V2.reply;
  message: string;
  request: string;
  sender: string;
  agent: string;
  time: number;
}

const validTransport = compileSchema<TransportV2>(transportV2Schema);
const validSecureRequest = compileSchema<SecureRequestV2>(secureRequestV2Schema);
const validRequest = compileSchema<RequestV2>(requestV2Schema);
const validSecureReply = compileSchema<SecureReplyV2>(secureReplyV2Schema);
const validReply = compileSchema<ReplyV2>(replyV2Schema);

/** How a v2 request is signed: the caller's JWT, and a signer of the request bytes (ed25519 with the caller's seed). */
export interface V2Security {
  callerJwt: string;
  /** Without it the request carries the bytes `insecure`, as go-choria does when the protocol is not secure. */
  sign?: (requestJson: Buffer) => Uint8Array;
  signerJwt?: string;
}

const INSECURE_BYTES = Buffer.from('insecure');

/**
 * The transport JSON of a v2 request, its version and security supplied here: the payload is
 * carried as bytes (base64 on the wire), `time` as nanoseconds.
 */
export function encodeRequestV2(fields: RequestFields, security: V2Security): string {
  const request = Buffer.from(
    JSON.stringify({
      protocol: V2.request,
      message: toBase64(fields.payload),
      id: fields.requestId,
      sender: fields.senderId,
      caller: fields.callerId,
      collective: fields.collective,
      agent: fields.agent,
      ttl: fields.ttl,
      // Nanoseconds exceed 2^53; any double that large is a whole number, and JSON prints it in full.
      time: Math.round(fields.time) * 1e6,
      filter: fields.filter,
    }),
  );
  const signature = security.sign?.(request) ?? INSECURE_BYTES;
  const secure = JSON.stringify({
    protocol: V2.secureRequest,
    request: request.toString('base64'),
    signature: toBase64(signature),
    caller: security.callerJwt,
    ...definedFields({ signer: security.signerJwt }),
  });
  return JSON.stringify({ protocol: V2.transport, data: toBase64(secure), headers: { reply: fields.replyTo, sender: fields.senderId } });
}

/** Decodes a v2 request from its already-parsed transport. Signatures are not verified (provisioning mode). */
export function decodeRequestV2(transport: TransportV2): Decoded<ChoriaRequest> {
  const replyTo = transport.headers.reply;
  if (replyTo === undefined || replyTo === '') return refuse('schema', 'transport', 'request has no reply header');
  const secureText = base64Field(transport.data, 'transport', 'data');
  if (!secureText.ok) return secureText;
  const secure = parseLayer(secureText.value, 'secure_request', V2.secureRequest, validSecureRequest);
  if (!secure.ok) return secure;
  if (decodeBase64Strict(secure.value.signature) === undefined) return refuse('base64', 'secure_request', 'signature is not valid base64');
  const requestText = base64Field(secure.value.request, 'secure_request', 'request');
  if (!requestText.ok) return requestText;
  const request = parseLayer(requestText.value, 'request', V2.request, validRequest);
  if (!request.ok) return request;
  const payload = base64Field(request.value.message, 'request', 'message');
  if (!payload.ok) return payload;
  const r = request.value;
  return {
    ok: true,
    value: {
      version: 'v2',
      requestId: r.id,
      senderId: r.sender,
      callerId: r.caller,
      collective: r.collective,
      agent: r.agent,
      ttl: r.ttl,
      time: r.time / 1e6,
      filter: r.filter === undefined ? newFilter() : { ...newFilter(), ...r.filter },
      // The bytes go through the same lenient base64 step as v1's message (go-choria's
      // SetBase64Payload on every request): discovery's `ping` arrives as `cGluZw==`.
      payload: lenientBase64(payload.value),
      replyTo,
      security: {
        signature: secure.value.signature,
        callerJwt: secure.value.caller,
        ...definedFields({ signerJwt: secure.value.signer }),
      },
    },
  };
}

/**
 * The transport JSON of a v2 reply. The hash is base64 SHA-256 of the reply JSON, as go-choria's
 * code writes it. `seenBy`: the network hops, as in v1, in the `trace` header.
 */
export function encodeReplyV2(reply: Omit<ChoriaReply, 'version' | 'sender'>, seenBy?: string[][]): string {
  const body = JSON.stringify({
    protocol: V2.reply,
    message: toBase64(reply.payload),
    request: reply.requestId,
    sender: reply.senderId,
    agent: reply.agent,
    time: Math.floor(reply.time / 1000),
  });
  const secure = JSON.stringify({ protocol: V2.secureReply, reply: toBase64(body), hash: sha256Base64(body) });
  // v2 names the hops `trace` (go-choria's v2 TransportHeaders), where v1 says `seen-by`.
  const headers = { sender: reply.senderId, ...definedFields({ trace: seenBy }) };
  return JSON.stringify({ protocol: V2.transport, data: toBase64(secure), headers });
}

/**
 * Decodes a v2 reply from its already-parsed transport. The hash may be base64 (go-choria's code)
 * or hex (its schema's description): either must match the reply bytes.
 */
export function decodeReplyV2(transport: TransportV2): Decoded<ChoriaReply> {
  const sender = transport.headers.sender;
  if (sender === undefined) return refuse('schema', 'transport', 'reply has no sender header');
  const secureText = base64Field(transport.data, 'transport', 'data');
  if (!secureText.ok) return secureText;
  const secure = parseLayer(secureText.value, 'secure_reply', V2.secureReply, validSecureReply);
  if (!secure.ok) return secure;
  const replyBytes = decodeBase64Strict(secure.value.reply);
  if (replyBytes === undefined) return refuse('base64', 'secure_reply', 'reply is not valid base64');
  const digest = sha256(replyBytes);
  if (secure.value.hash !== digest.toString('base64') && secure.value.hash !== digest.toString('hex'))
    return refuse('hash', 'secure_reply', 'hash does not match the reply');
  const reply = parseLayer(replyBytes.toString('utf8'), 'reply', V2.reply, validReply);
  if (!reply.ok) return reply;
  const payload = base64Field(reply.value.message, 'reply', 'message');
  if (!payload.ok) return payload;
  const r = reply.value;
  return {
    ok: true,
    value: { version: 'v2', requestId: r.request, senderId: r.sender, sender, agent: r.agent, time: r.time * 1000, payload: payload.value },
  };
}

/** Validates an already-parsed v2 transport. */
export const isTransportV2 = validTransport;
