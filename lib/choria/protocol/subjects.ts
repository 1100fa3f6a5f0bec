import { lazyCrypto } from '../../lazyCrypto';
import { md5Hex, sha256 } from './encoding';

/**
 * How a caller id is hashed in reply subjects and inboxes: `md5`, or `sha256` where go-choria runs
 * in FIPS 140 mode (0.30.0: its client, broker and connector all switch; a FIPS broker grants only
 * `*.reply.<sha256(caller)>.>`). `streams/choria/fipsMode.ts` says which this process is in.
 */
export type CallerHash = 'md5' | 'sha256';

/** The hex hash of a caller id that names its replies. */
export function callerHash(callerId: string, hash: CallerHash = 'md5'): string {
  return hash === 'md5' ? md5Hex(callerId) : sha256(callerId).toString('hex');
}

/** The collective a provisioning-mode server lives in (the only one it joins). */
export const PROVISIONING_COLLECTIVE = 'provisioning';

/**
 * A new request id: a v4 UUID without its dashes, 32 hex characters, as go-choria's
 * `NewRequestID` (the v1 schema insists on exactly 32).
 */
export function newRequestId(): string {
  return lazyCrypto().randomUUID().replaceAll('-', '');
}

/** `<collective>.reply.<md5 (or sha256) hex of caller id>`: where every reply to this caller lands. */
export function replyPrefix(collective: string, callerId: string, hash: CallerHash = 'md5'): string {
  return `${collective}.reply.${callerHash(callerId, hash)}`;
}

/** `<collective>.reply.<md5 (or sha256) hex of caller id>.<request id>`, as go-choria builds it. */
export function replySubject(collective: string, callerId: string, requestId: string, hash: CallerHash = 'md5'): string {
  return `${replyPrefix(collective, callerId, hash)}.${requestId}`;
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
