import { jwtClaims } from '../jwtClaims';
import { CallerHash, callerHash } from './protocol/subjects';

/** What a Choria client (or server) JWT says about its holder, read without verifying it. */
export interface ClientTokenInfo {
  /** `choria_client_id` (a client) or `choria_server` (a server). */
  purpose: 'choria_client_id' | 'choria_server';
  /** The caller id (`callerid` of a client token, `identity` of a server token). */
  callerId: string;
  /** MD5 (SHA-256 in FIPS 140 mode) of the caller id: the unique part of the token's private reply inboxes. */
  uniqueId: string;
  /** When it expires (ms since the epoch), when it says. */
  expiresAt: number | undefined;
}

/** A token that cannot serve as a connection token, with the reason. */
export class ClientTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ClientTokenError';
  }
}

/**
 * Reads a client JWT as go-choria's connector does before connecting (`UniqueIDFromUnverifiedToken`,
 * choria-io/tokens `NatsConnectionHelpers`): unverified, since only the broker holds the issuer's
 * key. The purpose must be a client's or a server's (anything else cannot log in: `unsupported
 * token purpose`) and the caller id present. Throws {@link ClientTokenError}; the message never
 * quotes the token.
 */
export function readClientToken(token: string, hash: CallerHash = 'md5'): ClientTokenInfo {
  let claims: Record<string, unknown>;
  try {
    claims = jwtClaims(token.trim());
  } catch (error) {
    throw new ClientTokenError(`could not parse JWT: ${(error as Error).message}`);
  }
  const purpose = claims.purpose;
  if (purpose !== 'choria_client_id' && purpose !== 'choria_server')
    throw new ClientTokenError(`unsupported token purpose: ${JSON.stringify(purpose ?? '')}`);
  const callerId = purpose === 'choria_client_id' ? claims.callerid : claims.identity;
  if (typeof callerId !== 'string' || callerId === '')
    throw new ClientTokenError(`no ${purpose === 'choria_client_id' ? 'callerid' : 'identity'} in the token`);
  return {
    purpose,
    callerId,
    uniqueId: callerHash(callerId, hash),
    expiresAt: typeof claims.exp === 'number' ? claims.exp * 1000 : undefined,
  };
}
