import type { ValidateFunction } from 'ajv';
import type { Refusal } from './badMessages';
import { PROVISIONING_LOCK_MESSAGE, ProtocolError, ProvisioningLockError, RpcStatusError, StatusCode } from './errors';
import { decodeReply } from './protocol/codec';
import { decodeAgentReply } from './protocol/mcorpc';
import { ProtocolVersion } from './protocol/types';

/** A successful RPC reply (status 0). */
export interface RpcReply<T = unknown> {
  /** The replying node (transport header). */
  sender: string;
  requestId: string;
  statuscode: number;
  statusmsg: string;
  data: T;
  version: ProtocolVersion;
}

/** What one attempt waits for. */
export interface ExpectedReply {
  /** `agent#action`, for errors. */
  rpc: string;
  /** The node asked: only its reply answers the attempt. */
  identity: string;
  requestId: string;
  /** Replies larger than this are refused unread. */
  maxBytes: number;
  /** The action's reply schema (DDL defaults filled in); absent: any data. */
  validate?: ValidateFunction;
  /** Describes the schema's errors for the refusal's message. */
  describeErrors?: (validate: ValidateFunction) => string;
}

/**
 * What a message on an attempt's reply subject means for that attempt:
 * - `answer`: the node asked answered OK (with data that fits the action, when a schema is given);
 * - `status`: the node asked answered with a non-zero status ({@link ProvisioningLockError} for the
 *   lock refusal, DECISIONS P10): a real answer that ends the attempt;
 * - `refused`: not an answer to this attempt, to be counted and skipped (DECISIONS P18): it does not
 *   decode at some layer, it names another request id, it comes from another node than the one
 *   asked (its envelope's sender id), or its data does not fit the action.
 */
export type ReplyVerdict =
  | { kind: 'answer'; reply: RpcReply }
  | { kind: 'status'; error: RpcStatusError }
  /** `envelope`: the Choria layers decoded and the hash held (what go-choria counts as valid), or what stopped them. */
  | { kind: 'refused'; refusal: Refusal; envelope: 'valid' | ProtocolError };

/**
 * Judges one message that arrived on an attempt's reply subject (see {@link ReplyVerdict}). Never
 * throws; a refusal's message never quotes the body.
 */
export function judgeReply(data: Uint8Array | string, expected: ExpectedReply): ReplyVerdict {
  const refused = (refusal: Refusal): ReplyVerdict => ({ kind: 'refused', refusal, envelope: 'valid' });
  const decoded = decodeReply(data, { maxBytes: expected.maxBytes });
  if (!decoded.ok) return { kind: 'refused', refusal: decoded.error, envelope: decoded.error };
  const reply = decoded.value;
  if (reply.requestId !== expected.requestId)
    return refused(new ProtocolError('schema', 'reply', 'request id does not match the reply subject'));
  if (reply.senderId !== expected.identity)
    return refused({ reason: 'stranger', layer: 'reply', message: `a reply from ${reply.senderId} to a request for ${expected.identity}` });
  const agentReply = decodeAgentReply(reply.payload);
  if (!agentReply.ok) return refused(agentReply.error);
  const { statuscode, statusmsg, data: replyData } = agentReply.value;
  if (statuscode !== StatusCode.OK) {
    const Type = statuscode === StatusCode.Aborted && statusmsg === PROVISIONING_LOCK_MESSAGE ? ProvisioningLockError : RpcStatusError;
    return { kind: 'status', error: new Type(expected.rpc, reply.sender, statuscode, statusmsg) };
  }
  const { validate } = expected;
  if (validate !== undefined && !validate(replyData)) {
    const why = expected.describeErrors?.(validate) ?? 'does not fit the action';
    return refused(new ProtocolError('payload', 'agent', `${expected.rpc} reply data: ${why}`));
  }
  return {
    kind: 'answer',
    reply: { sender: reply.sender, requestId: expected.requestId, statuscode, statusmsg, data: replyData, version: reply.version },
  };
}
