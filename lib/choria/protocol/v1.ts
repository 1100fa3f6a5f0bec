import { sha256Base64, toBase64 } from './encoding';
import { base64Field, lenientBase64, parseLayer, refuse } from './layers';
import { compileSchema, replyV1Schema, requestV1Schema, secureReplyV1Schema, secureRequestV1Schema, transportV1Schema } from './schemas';
import { ChoriaReply, ChoriaRequest, Decoded, FactFilter, RequestFields } from './types';
import { definedFields } from '../../definedFields';

/** The v1 protocol strings, outermost layer first. */
export const V1 = {
  transport: 'choria:transport:1',
  secureRequest: 'choria:secure:request:1',
  request: 'choria:request:1',
  secureReply: 'choria:secure:reply:1',
  reply: 'choria:reply:1',
} as const;

/** The signature and certificate an unsigned (provisioning-mode) v1 request carries. */
export const INSECURE = 'insecure';

export interface TransportV1 {
  protocol: typeof V1.transport;
  data: string;
  headers: {
    'reply-to'?: string;
    mc_sender?: string;
    'seen-by'?: string[][];
    federation?: { req: string; 'reply-to'?: string; target?: string[] };
  };
}
interface SecureRequestV1 {
  protocol: typeof V1.secureRequest;
  message: string;
  signature: string;
  pubcert: string;
}
interface RequestV1 {
  protocol: typeof V1.request;
  message: string;
  envelope: {
    requestid: string;
    senderid: string;
    callerid: string;
    collective: string;
    agent: string;
    ttl: number;
    time: number;
    filter: { fact: FactFilter[]; cf_class: string[]; agent?: string[]; identity: string[]; compound: unknown[][] };
  };
}
interface SecureReplyV1 {
  protocol: typeof V1.secureReply;
  message: string;
  hash: string;
}
interface ReplyV1 {
  protocol: typeof V1.reply;
  message: string;
  envelope: { requestid: string; senderid: string; agent: string; time: number };
}

const validTransport = compileSchema<TransportV1>(transportV1Schema);
const validSecureRequest = compileSchema<SecureRequestV1>(secureRequestV1Schema);
const validRequest = compileSchema<RequestV1>(requestV1Schema);
const validSecureReply = compileSchema<SecureReplyV1>(secureReplyV1Schema);
const validReply = compileSchema<ReplyV1>(replyV1Schema);

/**
 * How a v1 request is signed, as go-choria's x509 providers sign (`SecureRequest.SetMessage`): the
 * caller's certificate (PEM) goes in `pubcert`, and `signature` is the standard base64 of what
 * `sign` returns for the request JSON's bytes (RSA PKCS#1 v1.5 over its SHA-256).
 */
export interface V1Signer {
  pubcert(): string;
  sign(requestJson: Buffer): Uint8Array;
}

/**
 * The transport JSON of a v1 request: transport → secure request → request. Without a signer the
 * secure request carries `insecure` as signature and certificate, as go-choria does when the
 * protocol is not secure (provisioning mode, `choria_insecure`). The payload goes into `message` as
 * is (raw JSON for RPCs, base64 for discovery's `ping`); `time` is sent as whole seconds. A signer
 * that throws throws here.
 */
export function encodeRequestV1(fields: RequestFields, signer?: V1Signer): string {
  const request = JSON.stringify({
    protocol: V1.request,
    message: fields.payload,
    envelope: {
      requestid: fields.requestId,
      senderid: fields.senderId,
      callerid: fields.callerId,
      collective: fields.collective,
      agent: fields.agent,
      ttl: fields.ttl,
      time: Math.floor(fields.time / 1000),
      filter: fields.filter,
    },
  });
  const secure = JSON.stringify({
    protocol: V1.secureRequest,
    message: request,
    signature: signer === undefined ? INSECURE : toBase64(signer.sign(Buffer.from(request, 'utf8'))),
    pubcert: signer === undefined ? INSECURE : signer.pubcert(),
  });
  return JSON.stringify({
    protocol: V1.transport,
    data: toBase64(secure),
    headers: { 'reply-to': fields.replyTo, mc_sender: fields.senderId },
  });
}

/**
 * Decodes a v1 request from its already-parsed transport. The signature is not verified here (a
 * provisioning-mode server does not); `security.signed` keeps the exact text it covers for a
 * server that does.
 */
export function decodeRequestV1(transport: TransportV1): Decoded<ChoriaRequest> {
  const replyTo = transport.headers['reply-to'];
  if (replyTo === undefined) return refuse('schema', 'transport', 'request has no reply-to header');
  const secureText = base64Field(transport.data, 'transport', 'data');
  if (!secureText.ok) return secureText;
  const secure = parseLayer(secureText.value, 'secure_request', V1.secureRequest, validSecureRequest);
  if (!secure.ok) return secure;
  const request = parseLayer(secure.value.message, 'request', V1.request, validRequest);
  if (!request.ok) return request;
  const { envelope, message } = request.value;
  return {
    ok: true,
    value: {
      version: 'v1',
      requestId: envelope.requestid,
      senderId: envelope.senderid,
      callerId: envelope.callerid,
      collective: envelope.collective,
      agent: envelope.agent,
      ttl: envelope.ttl,
      time: envelope.time * 1000,
      filter: {
        fact: envelope.filter.fact,
        cf_class: envelope.filter.cf_class,
        agent: envelope.filter.agent ?? [],
        identity: envelope.filter.identity,
        compound: envelope.filter.compound,
      },
      payload: lenientBase64(message),
      replyTo,
      security: { signature: secure.value.signature, pubcert: secure.value.pubcert, signed: secure.value.message },
    },
  };
}

/**
 * The transport JSON of a v1 reply, with the SHA-256 hash go-choria's client checks. `seenBy`: the
 * network hops go-choria's connector records on everything it publishes (`[in, processor, out]`).
 */
export function encodeReplyV1(reply: Omit<ChoriaReply, 'version' | 'sender'>, seenBy?: string[][]): string {
  const body = JSON.stringify({
    protocol: V1.reply,
    message: reply.payload,
    envelope: { requestid: reply.requestId, senderid: reply.senderId, agent: reply.agent, time: Math.floor(reply.time / 1000) },
  });
  const secure = JSON.stringify({ protocol: V1.secureReply, message: body, hash: sha256Base64(body) });
  const headers = { mc_sender: reply.senderId, ...definedFields({ 'seen-by': seenBy }) };
  return JSON.stringify({ protocol: V1.transport, data: toBase64(secure), headers });
}

/** Decodes a v1 reply from its already-parsed transport, refusing it when the hash does not match. */
export function decodeReplyV1(transport: TransportV1): Decoded<ChoriaReply> {
  const sender = transport.headers.mc_sender;
  if (sender === undefined) return refuse('schema', 'transport', 'reply has no mc_sender header');
  const secureText = base64Field(transport.data, 'transport', 'data');
  if (!secureText.ok) return secureText;
  const secure = parseLayer(secureText.value, 'secure_reply', V1.secureReply, validSecureReply);
  if (!secure.ok) return secure;
  if (sha256Base64(secure.value.message) !== secure.value.hash) return refuse('hash', 'secure_reply', 'hash does not match the reply');
  const reply = parseLayer(secure.value.message, 'reply', V1.reply, validReply);
  if (!reply.ok) return reply;
  const { envelope, message } = reply.value;
  return {
    ok: true,
    value: {
      version: 'v1',
      requestId: envelope.requestid,
      senderId: envelope.senderid,
      sender,
      agent: envelope.agent,
      time: envelope.time * 1000,
      payload: message,
    },
  };
}

/** Validates an already-parsed v1 transport. */
export const isTransportV1 = validTransport;
