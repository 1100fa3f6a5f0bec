import { nodeSiteFiles } from '../../../../streams/siteFiles';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, decodeProtectedHeader, jwtVerify } from 'jose';
import pino from 'pino';
import { Writable } from 'node:stream';
import {
  ed25519PrivateKeyFromSeed,
  ed25519PublicKeyFromRaw,
  ed25519Sign,
  ed25519Verify,
  rawEd25519PublicKey,
} from '../../../../lib/choria/ed25519Keys';
import { ksuidTime } from '../../../../lib/choria/ksuid';
import {
  ServerClaims,
  ServerJwtError,
  addChainIssuerData,
  buildServerClaims,
  readSigningKey,
  signServerJwt,
} from '../../../../lib/provision/credentials/serverJwt';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0, 250);
const now = (): number => NOW;
const t = Math.floor(NOW / 1000);
const HOUR = 3_600_000;
const YEAR = 365 * 24 * HOUR;

let dir: string;
const file = (name: string, text: string | Buffer): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'rxfleet-serverjwt-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const nodeKey = rawEd25519PublicKey(generateKeyPairSync('ed25519').publicKey).toString('hex');
const request = { identity: 'n1.example.net', ed25519PublicKey: nodeKey, configuration: {}, defaultValidityMs: YEAR, now };

describe('buildServerClaims (generateServerJWT before signing)', () => {
  it('defaults: collectives mcollective, ou choria, no permissions nor pub subjects, issuer Choria Provisioner', () => {
    const claims = buildServerClaims(request);
    expect(claims).toEqual({
      identity: 'n1.example.net',
      collectives: ['mcollective'],
      ou: 'choria',
      purpose: 'choria_server',
      public_key: nodeKey,
      iss: 'Choria Provisioner',
      exp: t + YEAR / 1000,
      nbf: t,
      iat: t,
      jti: claims.jti,
    });
    expect(Object.keys(claims)).toEqual(['identity', 'collectives', 'ou', 'purpose', 'public_key', 'iss', 'exp', 'nbf', 'iat', 'jti']);
    expect(ksuidTime(claims.jti)).toBe(t * 1000);
  });

  it('takes collectives from the configuration, choria for the choria security provider', () => {
    expect(buildServerClaims({ ...request, configuration: { collectives: 'one,two' } }).collectives).toEqual(['one', 'two']);
    expect(buildServerClaims({ ...request, configuration: { 'plugin.security.provider': 'choria' } }).collectives).toEqual(['choria']);
    expect(
      buildServerClaims({ ...request, configuration: { 'plugin.security.provider': 'choria', collectives: ' a , b ,' } }).collectives,
    ).toEqual(['a', 'b']);
  });

  it("applies the helper's server_claims: ou, absolute exp, collectives, pub_subjects, permissions", () => {
    const claims = buildServerClaims({
      ...request,
      configuration: { collectives: 'x' },
      serverClaims: {
        ou: 'acme',
        exp: t + (2 * YEAR) / 1000,
        collectives: ['c1'],
        pub_subjects: ['reg.>'],
        permissions: { streams: true, submission: false },
      },
    });
    expect(claims).toMatchObject({
      ou: 'acme',
      exp: t + (2 * YEAR) / 1000,
      collectives: ['c1'],
      pub_subjects: ['reg.>'],
      permissions: { streams: true },
    });
    expect(claims.permissions).toEqual({ streams: true });
    expect(Object.keys(claims)).toEqual([
      'identity',
      'collectives',
      'permissions',
      'ou',
      'pub_subjects',
      'purpose',
      'public_key',
      'iss',
      'exp',
      'nbf',
      'iat',
      'jti',
    ]);
  });

  it("a validity of an hour or less (an exp in the past: the docs' 157680000) falls back to server_jwt_validity with a warning", () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) }));
    expect(buildServerClaims({ ...request, serverClaims: { exp: 157_680_000 }, logger }).exp).toBe(t + YEAR / 1000);
    expect(buildServerClaims({ ...request, serverClaims: { exp: t + 1800 } }).exp).toBe(t + YEAR / 1000);
    expect(lines.some((l) => l.includes('is too short, setting to default'))).toBe(true);
    // Upstream's own test: a default of one hour is itself "too short" and is used anyway.
    expect(buildServerClaims({ ...request, defaultValidityMs: HOUR }).exp).toBe(t + 3600);
  });

  it.each([
    [{ ed25519PublicKey: '' }, 'no ed25519 public key set'],
    [{ defaultValidityMs: 0 }, 'no default validity configured'],
    [{ identity: '' }, 'identity is required'],
    [{ ed25519PublicKey: 'zz' }, "encoding/hex: invalid byte: U+007A 'z'"],
  ])('refuses %j: %s', (change, message) => {
    expect(() => buildServerClaims({ ...request, ...change })).toThrow(new ServerJwtError(message));
  });
});

describe('readSigningKey (SignTokenWithKeyFile file rules)', () => {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const seedHex = randomBytes(32).toString('hex');

  it('PKCS#1 and PKCS#8 RSA PEM files sign RS256', () => {
    expect(readSigningKey(file('pkcs1.pem', rsa.privateKey.export({ type: 'pkcs1', format: 'pem' })), nodeSiteFiles).alg).toBe('RS256');
    expect(readSigningKey(file('pkcs8.pem', rsa.privateKey.export({ type: 'pkcs8', format: 'pem' })), nodeSiteFiles).alg).toBe('RS256');
  });

  it('exactly 64 hex characters sign EdDSA', () => {
    const key = readSigningKey(file('signer.seed', seedHex), nodeSiteFiles);
    expect(key.alg).toBe('EdDSA');
    expect(rawEd25519PublicKey(key.key)).toEqual(rawEd25519PublicKey(ed25519PrivateKeyFromSeed(Buffer.from(seedHex, 'hex'))));
  });

  it.each([
    ['a seed with a trailing newline', () => file('nl.seed', `${seedHex}\n`), /^unsupported key in .*nl\.seed \(.*found 65 bytes\)$/],
    [
      '64 characters that are not hex',
      () => file('bad.seed', 'x'.repeat(64)),
      "invalid ed25519 seed file: encoding/hex: invalid byte: U+0078 'x'",
    ],
    [
      'a PKCS#8 key that is not RSA',
      () => file('ed.pem', generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' })),
      'could not parse signing key: key is not a valid RSA private key',
    ],
    ['a missing file', () => join(dir, 'absent'), /^could not read signing key: ENOENT/],
  ])('refuses %s', (_what, path, message) => {
    expect(() => readSigningKey(path(), nodeSiteFiles)).toThrow(message);
  });
});

describe('signServerJwt', () => {
  it('signs RS256 with an RSA key: the token verifies with the public key and carries the claims', async () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const token = await signServerJwt({
      ...request,
      files: nodeSiteFiles,
      configuration: { collectives: 'one,two' },
      jwtSigningKey: file('jwt-signer.pem', rsa.privateKey.export({ type: 'pkcs1', format: 'pem' })),
    });
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'RS256', typ: 'JWT' });
    const { payload } = await jwtVerify(token, rsa.publicKey, { currentDate: new Date(NOW) });
    expect(payload).toMatchObject({
      identity: 'n1.example.net',
      collectives: ['one', 'two'],
      ou: 'choria',
      iss: 'Choria Provisioner',
      public_key: nodeKey,
      purpose: 'choria_server',
    });
    expect(payload.permissions).toBeUndefined();
    expect(payload.pub_subjects).toBeUndefined();
  });

  it.each([
    [{ ed25519PublicKey: '' }, 'no ed25519 public key set'],
    [{ jwtSigningKey: '' }, 'no jwt signing key configured using jwt_signing_key'],
  ])('refuses %j: %s', async (change, message) => {
    await expect(signServerJwt({ ...request, files: nodeSiteFiles, jwtSigningKey: '/x', ...change })).rejects.toThrow(
      new ServerJwtError(message),
    );
  });

  describe('as a chain issuer (jwt_signing_token)', () => {
    // An organisation issuer, and the provisioner's client token it issued (as `choria jwt client
    // --issuer` would): tcs = hex(sign(issuer, "<jti>.<public_key>")).
    const issuer = generateKeyPairSync('ed25519');
    const signerSeed = randomBytes(32);
    const signerPrivate = ed25519PrivateKeyFromSeed(signerSeed);
    const signerPublicHex = rawEd25519PublicKey(signerPrivate).toString('hex');
    const signerJti = '2Bc1JSyKKzfSS1WX5pDpFIDhw05';
    const signerExp = Math.floor(NOW / 1000) + 30 * 24 * 3600;
    const signerTcs = ed25519Sign(issuer.privateKey, Buffer.from(`${signerJti}.${signerPublicHex}`)).toString('hex');
    const signingToken = () =>
      new SignJWT({
        purpose: 'choria_client_id',
        callerid: 'up=provisioner',
        public_key: signerPublicHex,
        tcs: signerTcs,
        iss: `I-${rawEd25519PublicKey(issuer.publicKey).toString('hex')}`,
        exp: signerExp,
        jti: signerJti,
      })
        .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
        .sign(issuer.privateKey);

    it('chains the server token to the signer and signs it EdDSA with the signer seed; the chain verifies', async () => {
      const token = await signServerJwt({
        ...request,
        files: nodeSiteFiles,
        jwtSigningKey: file('signer.seed', signerSeed.toString('hex')),
        jwtSigningToken: file('signer.jwt', `${await signingToken()}\n`),
      });
      expect(decodeProtectedHeader(token).alg).toBe('EdDSA');
      // The token is signed by the signer...
      const { payload } = await jwtVerify(token, ed25519PublicKeyFromRaw(Buffer.from(signerPublicHex, 'hex')), {
        currentDate: new Date(NOW),
      });
      const claims = payload as unknown as ServerClaims;
      expect(claims.iss).toBe(`C-${signerJti}.${signerPublicHex}`);
      expect(claims.issexp).toBe(signerExp);
      // ...its validity is capped at the signer's expiry...
      expect(claims.exp).toBe(signerExp);
      // ...and the broker's IsSignedByIssuer check holds: the tcs is "<signer tcs>.<signer's signature of <jti>.<signer tcs>>",
      const [chainTcs, userSig] = claims.tcs?.split('.') ?? [];
      expect(chainTcs).toBe(signerTcs);
      expect(
        ed25519Verify(Buffer.from(signerPublicHex, 'hex'), Buffer.from(`${claims.jti}.${signerTcs}`), Buffer.from(userSig, 'hex')),
      ).toBe(true);
      // and the signer's tcs is the issuer's signature of "<signer jti>.<signer public key>".
      expect(
        ed25519Verify(rawEd25519PublicKey(issuer.publicKey), Buffer.from(`${signerJti}.${signerPublicHex}`), Buffer.from(chainTcs, 'hex')),
      ).toBe(true);
      expect(ksuidTime(claims.jti)).toBe(claims.iat * 1000);
    });

    it('keeps a shorter own expiry', () => {
      const claims = buildServerClaims({ ...request, defaultValidityMs: 2 * 24 * HOUR });
      const chained = addChainIssuerData(
        claims,
        `h.${Buffer.from(JSON.stringify({ tcs: 'abc', jti: 'j', public_key: 'pk', exp: claims.exp + 100 })).toString('base64url')}.s`,
        signerPrivate,
      );
      expect(chained.exp).toBe(claims.exp);
      expect(chained.issexp).toBe(claims.exp + 100);
    });

    it.each([
      [{ jti: 'j', public_key: 'pk', exp: 1 }, 'no Trust Chain Signature claim in JWT Signing Token'],
      [{ tcs: 'x', public_key: 'pk', exp: 1 }, 'id not set'],
      [{ tcs: 'x', jti: 'j', exp: 1 }, 'public key not set'],
      [{ tcs: 'x', jti: 'j', public_key: 'pk' }, 'issuer has no expiry'],
    ])('refuses a signing token %j: %s', (signer, message) => {
      const token = `h.${Buffer.from(JSON.stringify(signer)).toString('base64url')}.s`;
      expect(() => addChainIssuerData(buildServerClaims(request), token, signerPrivate)).toThrow(new ServerJwtError(message));
    });

    it('needs the signing key to be a seed file when chaining', async () => {
      const rsaPem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' });
      await expect(
        signServerJwt({
          ...request,
          files: nodeSiteFiles,
          jwtSigningKey: file('rsa-signer.pem', rsaPem),
          jwtSigningToken: file('signer2.jwt', await signingToken()),
        }),
      ).rejects.toThrow(/^encoding\/hex: invalid byte/);
    });
  });
});
