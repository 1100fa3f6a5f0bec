import type { Authenticator } from '@nats-io/transport-node';

/** A Choria client's broker login: its JWT, and a signer of the server's nonce with its ed25519 seed. */
export interface ChoriaJwtLogin {
  jwt: string;
  /** Signs the nonce's bytes (ed25519 with the client's seed). */
  sign(nonce: Buffer): Uint8Array;
}

/**
 * What go-choria's connector adds to CONNECT with the `choria` security provider (nats.go's
 * `Token` plus `UserJWT` with choria-io/tokens' `NatsConnectionHelpers`): the JWT as the token
 * (`auth_token`, which the Choria broker verifies against its organisation issuer) and as `jwt`,
 * and `sig`, the unpadded URL-safe base64 ed25519 signature of the nonce in the server's INFO (of
 * no bytes when the server sent none, as nats.go signs). Called on every (re)connect.
 */
export function choriaJwtAuthenticator(login: ChoriaJwtLogin): Authenticator {
  return (nonce?: string) => ({
    auth_token: login.jwt,
    jwt: login.jwt,
    sig: Buffer.from(login.sign(Buffer.from(nonce ?? '', 'utf8'))).toString('base64url'),
  });
}
