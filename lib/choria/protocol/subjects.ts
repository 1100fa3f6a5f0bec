import { randomUUID } from 'node:crypto';
import { md5Hex } from './encoding';

/** The collective a provisioning-mode server lives in (the only one it joins). */
export const PROVISIONING_COLLECTIVE = 'provisioning';

/**
 * A new request id: a v4 UUID without its dashes, 32 hex characters, as go-choria's
 * `NewRequestID` (the v1 schema insists on exactly 32).
 */
export function newRequestId(): string {
  return randomUUID().replaceAll('-', '');
}

/** `<collective>.reply.<md5 hex of caller id>`: where every reply to this caller lands. */
export function replyPrefix(collective: string, callerId: string): string {
  return `${collective}.reply.${md5Hex(callerId)}`;
}

/** `<collective>.reply.<md5 hex of caller id>.<request id>`, as go-choria builds it. */
export function replySubject(collective: string, callerId: string, requestId: string): string {
  return `${replyPrefix(collective, callerId)}.${requestId}`;
}

/** A direct request to one node: `<collective>.node.<identity>`. */
export function directSubject(collective: string, identity: string): string {
  return `${collective}.node.${identity}`;
}

/** A broadcast request to every node hosting an agent: `<collective>.broadcast.agent.<agent>`. */
export function broadcastSubject(collective: string, agent: string): string {
  return `${collective}.broadcast.agent.${agent}`;
}

/** The default caller id of an identity (x509 style `choria=<certname>`). */
export function callerIdFor(identity: string): string {
  return `choria=${identity}`;
}
