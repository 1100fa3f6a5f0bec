import { nodeSiteFiles } from '../../../../streams/siteFiles';
import 'reflect-metadata';
import { KeyObject, generateKeyPairSync, webcrypto } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JWTPayload, SignJWT } from 'jose';
import { X509CertificateGenerator, cryptoProvider } from '@peculiar/x509';
import { rawEd25519PublicKey } from '../../../../lib/choria/ed25519Keys';
import {
  JwtValidationError,
  readJwtVerificationKey,
  validateProvisioningJwt,
  verifyProvisioningJwt,
} from '../../../../lib/provision/credentials/provisioningJwt';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const now = (): number => NOW;
const t = NOW / 1000;

let dir: string;
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const otherRsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ed = generateKeyPairSync('ed25519');
const edHex = rawEd25519PublicKey(ed.publicKey).toString('hex');

const provisioning = (extra: JWTPayload = {}): JWTPayload => ({
  cht: 's3cret',
  chs: false,
  chu: 'nats://broker:4222',
  chpd: true,
  purpose: 'choria_provisioning',
  iss: 'Choria Tokens Package v0.0.1',
  sub: 'choria_provisioning',
  iat: t - 60,
  nbf: t - 60,
  exp: t + 3600,
  jti: 'abc',
  ...extra,
});
const sign = (payload: JWTPayload, key: KeyObject, alg: string): Promise<string> =>
  new SignJWT(payload).setProtectedHeader({ alg, typ: 'JWT' }).sign(key);

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rxfleet-jwt-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readJwtVerificationKey (jwt_verify_cert)', () => {
  it('reads an RSA public key PEM, a certificate, a hex ed25519 key file and an inline hex key', async () => {
    expect(
      readJwtVerificationKey(file('pub.pem', rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string), nodeSiteFiles).type,
    ).toBe('rsa');
    cryptoProvider.set(webcrypto as unknown as Parameters<typeof cryptoProvider.set>[0]);
    const keys = await webcrypto.subtle.generateKey(
      { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 },
      true,
      ['sign', 'verify'],
    );
    const cert = await X509CertificateGenerator.createSelfSigned({
      serialNumber: '01',
      name: 'CN=signer',
      notBefore: new Date(NOW - 86_400_000),
      notAfter: new Date(NOW + 86_400_000),
      keys,
      signingAlgorithm: { name: 'RSASSA-PKCS1-v1_5' },
    });
    expect(readJwtVerificationKey(file('cert.pem', cert.toString('pem')), nodeSiteFiles).type).toBe('rsa');
    expect(readJwtVerificationKey(file('ed.hex', `${edHex}\n`), nodeSiteFiles).type).toBe('ed25519');
    expect(readJwtVerificationKey(edHex, nodeSiteFiles).type).toBe('ed25519');
  });

  it.each([
    ['', 'no JWT verification certificate configured, cannot validate JWT'],
    ['not-a-file-nor-hex', "could not parse ed25519 public data: encoding/hex: invalid byte: U+006E 'n'"],
    ['abcd', 'invalid ed25519 public key size'],
  ])('refuses %j: %s', (value, message) => {
    expect(() => readJwtVerificationKey(value, nodeSiteFiles)).toThrow(new JwtValidationError(message));
  });

  it('refuses a PEM public key that is not RSA', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() =>
      readJwtVerificationKey(file('ec.pem', ec.publicKey.export({ type: 'spki', format: 'pem' }) as string), nodeSiteFiles),
    ).toThrow(/could not parse validation certificate: key is not a valid RSA public key/);
  });

  it('refuses a file that is neither PEM nor hex', () => {
    expect(() => readJwtVerificationKey(file('junk', 'hello world'), nodeSiteFiles)).toThrow(
      /^could not parse ed25519 public data: encoding\/hex: invalid byte/,
    );
  });
});

describe('verifyProvisioningJwt', () => {
  const rsaKey = () =>
    readJwtVerificationKey(file('rsa.pem', rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string), nodeSiteFiles);
  const edKey = () => readJwtVerificationKey(edHex, nodeSiteFiles);

  it.each(['RS256', 'RS384', 'RS512'])("accepts %s with an RSA key and returns the claims in Go's shape", async (alg) => {
    const claims = await verifyProvisioningJwt(await sign(provisioning({ unknown: 'dropped', v2: true }), rsa.privateKey, alg), rsaKey(), {
      now,
    });
    expect(claims).toEqual({
      cht: 's3cret',
      chs: false,
      chu: 'nats://broker:4222',
      chpd: true,
      extensions: null,
      ou: 'choria',
      v2: true,
      purpose: 'choria_provisioning',
      iss: 'Choria Tokens Package v0.0.1',
      sub: 'choria_provisioning',
      exp: t + 3600,
      nbf: t - 60,
      iat: t - 60,
      jti: 'abc',
    });
    expect(Object.keys(claims)).toEqual([
      'cht',
      'chs',
      'chu',
      'chpd',
      'extensions',
      'ou',
      'v2',
      'purpose',
      'iss',
      'sub',
      'exp',
      'nbf',
      'iat',
      'jti',
    ]);
  });

  it('accepts EdDSA with an ed25519 key, keeps a given ou and extensions', async () => {
    const claims = await verifyProvisioningJwt(
      await sign(provisioning({ ou: 'acme', extensions: { a: 1 } }), ed.privateKey, 'EdDSA'),
      edKey(),
      { now },
    );
    expect(claims.ou).toBe('acme');
    expect(claims.extensions).toEqual({ a: 1 });
  });

  it('a token with only sub or only purpose is a provisioning token', async () => {
    await expect(
      verifyProvisioningJwt(await sign(provisioning({ purpose: undefined }), ed.privateKey, 'EdDSA'), edKey(), { now }),
    ).resolves.toMatchObject({ purpose: '', sub: 'choria_provisioning' });
    await expect(
      verifyProvisioningJwt(await sign(provisioning({ sub: undefined }), ed.privateKey, 'EdDSA'), edKey(), { now }),
    ).resolves.toMatchObject({ purpose: 'choria_provisioning' });
  });

  it.each([
    [
      'an RSA algorithm with an ed25519 key',
      async () => [await sign(provisioning(), rsa.privateKey, 'RS256'), edKey()] as const,
      'could not parse provisioner token: rsa public key required',
    ],
    [
      'EdDSA with an RSA key',
      async () => [await sign(provisioning(), ed.privateKey, 'EdDSA'), rsaKey()] as const,
      'could not parse provisioner token: ed25519 public key required',
    ],
    [
      'HS256',
      async () => [await new SignJWT(provisioning()).setProtectedHeader({ alg: 'HS256' }).sign(new Uint8Array(32)), rsaKey()] as const,
      'could not parse provisioner token: signing method HS256 is invalid',
    ],
    [
      'another RSA key',
      async () => [await sign(provisioning(), otherRsa.privateKey, 'RS256'), rsaKey()] as const,
      'could not parse provisioner token: crypto/rsa: verification error',
    ],
    [
      'another ed25519 key',
      async () => [await sign(provisioning(), generateKeyPairSync('ed25519').privateKey, 'EdDSA'), edKey()] as const,
      'could not parse provisioner token: ed25519: verification error',
    ],
    [
      'an expired token',
      async () => [await sign(provisioning({ exp: t - 1 }), ed.privateKey, 'EdDSA'), edKey()] as const,
      'could not parse provisioner token: token is expired',
    ],
    [
      'a token not valid yet',
      async () => [await sign(provisioning({ nbf: t + 60 }), ed.privateKey, 'EdDSA'), edKey()] as const,
      'could not parse provisioner token: token is not valid yet',
    ],
    [
      'a token issued in the future',
      async () => [await sign(provisioning({ iat: t + 60, nbf: undefined }), ed.privateKey, 'EdDSA'), edKey()] as const,
      'could not parse provisioner token: token used before issued',
    ],
    [
      'a token of another purpose',
      async () => [await sign(provisioning({ purpose: 'choria_server', sub: 'x' }), ed.privateKey, 'EdDSA'), edKey()] as const,
      'not a provisioning token',
    ],
    [
      'a claim of the wrong type',
      async () => [await sign(provisioning({ chs: 'yes' }), ed.privateKey, 'EdDSA'), edKey()] as const,
      'could not parse provisioner token: json: cannot unmarshal string into claim chs of type bool',
    ],
    ['garbage', async () => ['not.a.jwt', edKey()] as const, /^could not parse provisioner token: token is malformed: /],
    ['nothing', async () => ['', edKey()] as const, 'no JWT received'],
  ])('refuses %s', async (_what, make, message) => {
    const [token, key] = await make();
    const failure = verifyProvisioningJwt(token, key, { now });
    await expect(failure).rejects.toThrow(JwtValidationError);
    await expect(failure).rejects.toThrow(message);
  });

  describe('with a trust chain signature (tcs)', () => {
    it('needs a chain issuer', async () => {
      const token = await sign(provisioning({ tcs: 'x.y', iss: 'I-abc', issexp: t + 60 }), ed.privateKey, 'EdDSA');
      await expect(verifyProvisioningJwt(token, edKey(), { now })).rejects.toThrow(/^token is expired/);
    });

    it('needs an issuer expiry that has not passed', async () => {
      const noIssexp = await sign(provisioning({ tcs: 'x.y', iss: 'C-abc.def' }), ed.privateKey, 'EdDSA');
      await expect(verifyProvisioningJwt(noIssexp, edKey(), { now })).rejects.toThrow(/^token is expired/);
      const issuerExpired = await sign(provisioning({ tcs: 'x.y', iss: 'C-abc.def', issexp: t - 1 }), ed.privateKey, 'EdDSA');
      await expect(verifyProvisioningJwt(issuerExpired, edKey(), { now })).rejects.toThrow('token is expired');
      const fine = await sign(provisioning({ tcs: 'x.y', iss: 'C-abc.def', issexp: t + 60 }), ed.privateKey, 'EdDSA');
      await expect(verifyProvisioningJwt(fine, edKey(), { now })).resolves.toMatchObject({ tcs: 'x.y', issexp: t + 60 });
    });
  });
});

describe('validateProvisioningJwt', () => {
  it('re-reads the key file on every call, so a rotated key is picked up', async () => {
    const path = file('rotating.pem', rsa.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    const byOther = await sign(provisioning(), otherRsa.privateKey, 'RS256');
    await expect(validateProvisioningJwt(byOther, path, nodeSiteFiles, { now })).rejects.toThrow('verification error');
    writeFileSync(path, otherRsa.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    await expect(validateProvisioningJwt(byOther, path, nodeSiteFiles, { now })).resolves.toMatchObject({ cht: 's3cret' });
  });

  it('takes an inline hex ed25519 key when the value is not a file', async () => {
    await expect(
      validateProvisioningJwt(await sign(provisioning(), ed.privateKey, 'EdDSA'), edHex, nodeSiteFiles, { now }),
    ).resolves.toMatchObject({ purpose: 'choria_provisioning' });
  });
});
