import { SignJWT, decodeJwt } from 'jose';
import { jwtClaims } from '../../lib/jwtClaims';

const part = (value: unknown): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

describe('jwtClaims: a JWT read without verifying it, as jose decodes it', () => {
  it('gives the claims of a signed token, the same as jose', async () => {
    const token = await new SignJWT({ purpose: 'choria_client_id', callerid: 'choria=ops', exp: 1_900_000_000 })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(new TextEncoder().encode('a secret long enough for HS256'));
    expect(jwtClaims(token)).toEqual({ purpose: 'choria_client_id', callerid: 'choria=ops', exp: 1_900_000_000 });
    expect(jwtClaims(token)).toEqual(decodeJwt(token));
  });

  it.each([
    ['two parts', `${part({ alg: 'none' })}.${part({ a: 1 })}`, 'Invalid JWT'],
    ['five parts (JWE)', 'a.b.c.d.e', 'only JWTs using Compact JWS serialization can be decoded'],
    ['an empty payload', `${part({ alg: 'none' })}..sig`, 'Failed to base64url decode the payload'],
    ['a payload that is not base64url', `${part({ alg: 'none' })}.a+b/c=.sig`, 'Failed to base64url decode the payload'],
    ['a payload that is not JSON', `${part({ alg: 'none' })}.${part('not json')}.sig`, 'Failed to parse the decoded payload as JSON'],
    ['a payload that is an array', `${part({ alg: 'none' })}.${part([1, 2])}.sig`, 'Invalid JWT Claims Set'],
    ['a payload that is a string', `${part({ alg: 'none' })}.${part('"claims"')}.sig`, 'Invalid JWT Claims Set'],
  ])('refuses %s, as jose does', (_what, token, message) => {
    expect(() => jwtClaims(token)).toThrow(message);
    expect(() => decodeJwt(token)).toThrow();
  });
});
