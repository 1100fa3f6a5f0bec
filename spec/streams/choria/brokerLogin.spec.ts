import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { choriaJwtAuthenticator } from '../../../streams/choria/brokerLogin';
import { daemonConnectionOptions } from '../../../streams/natsConnection';

describe('the Choria broker login', () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const login = { jwt: 'header.claims.signature', sign: (nonce: Buffer) => sign(null, nonce, privateKey) };

  it('sends the JWT as the token and as jwt, and the nonce signed as nats.go does (unpadded URL-safe base64)', () => {
    const auth = choriaJwtAuthenticator(login)('n0nce-from-INFO') as { auth_token: string; jwt: string; sig: string };
    expect(auth.auth_token).toBe('header.claims.signature');
    expect(auth.jwt).toBe('header.claims.signature');
    expect(auth.sig).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(verify(null, Buffer.from('n0nce-from-INFO'), publicKey, Buffer.from(auth.sig, 'base64url'))).toBe(true);
    // A server that sent no nonce gets the signature of no bytes, as nats.go signs.
    const empty = choriaJwtAuthenticator(login)() as { sig: string };
    expect(verify(null, Buffer.alloc(0), publicKey, Buffer.from(empty.sig, 'base64url'))).toBe(true);
  });

  it('daemonConnectionOptions: the login beside user and password, TLS without verification when told, and never giving up on a refused login', () => {
    const options = daemonConnectionOptions({
      servers: ['b:4222'],
      user: 'provisioner',
      password: 'pw',
      jwtLogin: login,
      tls: { verify: false },
    });
    expect(options).toMatchObject({ user: 'provisioner', pass: 'pw', ignoreAuthErrorAbort: true, tls: { rejectUnauthorized: false } });
    const authenticators = options.authenticator as unknown as ((nonce?: string) => Record<string, string>)[];
    // The login, beside the backoff's observer (which adds nothing to the CONNECT).
    expect(authenticators).toHaveLength(2);
    expect(Object.assign({}, ...authenticators.map((a) => a('x')))).toMatchObject({
      auth_token: 'header.claims.signature',
      jwt: 'header.claims.signature',
    });
    expect(daemonConnectionOptions({ servers: ['b:4222'], tls: { verify: true } }).tls).toEqual({});
  });
});
