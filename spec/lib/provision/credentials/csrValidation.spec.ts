import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import pino from 'pino';
import { Writable } from 'node:stream';
import { Pkcs10CertificateRequestGenerator, SubjectAlternativeNameExtension, cryptoProvider } from '@peculiar/x509';
import {
  CertDenyList,
  DEFAULT_CERT_DENY_LIST,
  DenyPatternError,
  compileDenyPattern,
} from '../../../../lib/provision/credentials/certDenyList';
import { CsrValidationError, validateCsr } from '../../../../lib/provision/credentials/csrValidation';

cryptoProvider.set(webcrypto as unknown as Parameters<typeof cryptoProvider.set>[0]);
const alg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
let keys: Awaited<ReturnType<typeof webcrypto.subtle.generateKey>>;

/** A real CSR, as a Choria server's `gencsr` makes one. */
async function csr(cn: string, dnsNames: string[] = []): Promise<{ csr: string; public_key: string; ssldir: string }> {
  const request = await Pkcs10CertificateRequestGenerator.create({
    name: `CN=${cn}, O=Choria`,
    keys: keys as never,
    signingAlgorithm: alg,
    extensions:
      dnsNames.length === 0 ? [] : [new SubjectAlternativeNameExtension(dnsNames.map((value) => ({ type: 'dns' as const, value })))],
  });
  return { csr: request.toString('pem'), public_key: '', ssldir: '/etc/choria/ssl' };
}

const defaults = new CertDenyList();

beforeAll(async () => {
  keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
});

describe('validateCsr (host_test.go validateCSR, plus P12)', () => {
  it('accepts a CSR whose CN is the identity, returning its names', async () => {
    expect(validateCsr(await csr('n1.example.net', ['n1.example.net', 'alias.example.net']), 'n1.example.net', defaults)).toEqual({
      commonName: 'n1.example.net',
      dnsNames: ['n1.example.net', 'alias.example.net'],
    });
  });

  it.each([null, undefined, { csr: '', public_key: '', ssldir: '' }])('refuses %j: no CSR received', (reply) => {
    expect(() => validateCsr(reply, 'n1', defaults)).toThrow(new CsrValidationError('no CSR received'));
  });

  it('refuses a CN that is not the identity', async () => {
    const reply = await csr('other.example.net');
    expect(() => validateCsr(reply, 'n1.example.net', defaults)).toThrow(
      new CsrValidationError('common name other.example.net does not match identity n1.example.net'),
    );
  });

  it.each(['bob.choria', 'bob.mcollective', 'bob.privileged.choria', 'bob.privileged.mcollective'])(
    'refuses the client-like CN %s with the default deny list, logging it',
    async (cn) => {
      const lines: string[] = [];
      const logger = pino({ level: 'error' }, new Writable({ write: (c, _e, cb) => (lines.push(String(c)), cb()) }));
      const reply = await csr(cn);
      expect(() => validateCsr(reply, cn, defaults, logger)).toThrow(new CsrValidationError(`${cn} matches denied certificate pattern`));
      expect(lines.join('')).toContain(`Denying CSR with name ${cn}`);
    },
  );

  it('refuses a denied DNS name', async () => {
    const reply = await csr('n1.example.net', ['n1.example.net', 'admin.privileged.choria']);
    expect(() => validateCsr(reply, 'n1.example.net', defaults)).toThrow(
      new CsrValidationError('admin.privileged.choria matches denied certificate pattern'),
    );
  });

  it('uses a configured deny list instead of the default', async () => {
    const list = new CertDenyList(['/^db\\d+\\./']);
    const ok = await csr('bob.choria');
    expect(validateCsr(ok, 'bob.choria', list).commonName).toBe('bob.choria');
    const denied = await csr('db1.example.net');
    expect(() => validateCsr(denied, 'db1.example.net', list)).toThrow('db1.example.net matches denied certificate pattern');
  });

  it.each([
    ['text without a PEM block', 'hello', 'could not parse CSR: no PEM block found'],
    [
      'a PEM block of garbage',
      '-----BEGIN CERTIFICATE REQUEST-----\nbm90IGEgY3Ny\n-----END CERTIFICATE REQUEST-----\n',
      /^could not parse CSR: /,
    ],
    ['a truncated PEM block', '-----BEGIN CERTIFICATE REQUEST-----\nMIIC\n', 'could not parse CSR: no PEM block found'],
  ])('refuses %s with a clear error, never a crash (P12)', (_what, text, message) => {
    expect(() => validateCsr({ csr: text, public_key: '', ssldir: '' }, 'n1', defaults)).toThrow(CsrValidationError);
    expect(() => validateCsr({ csr: text, public_key: '', ssldir: '' }, 'n1', defaults)).toThrow(message);
  });
});

describe('CertDenyList', () => {
  it("defaults to upstream's four patterns when empty", () => {
    expect(new CertDenyList([]).entries).toEqual([...DEFAULT_CERT_DENY_LIST]);
    expect(defaults.match('n1.example.net')).toBeUndefined();
    expect(defaults.match('x.privileged.choria')).toBe('\\.privileged.choria$');
  });

  it.each([
    ['/\\.internal$/', 'a.internal', true],
    ['/\\.internal$/', 'internal.a', false],
    ['(?i)\\.CHORIA$', 'a.choria', true],
    ['^[[:digit:]]+\\.', '42.example', true],
    ['^[[:^digit:]]+$', 'abc', true],
    ['^[[:^digit:]]+$', 'a1', false],
    ['(?P<host>web)\\d', 'web1.x', true],
    ['\\Aweb\\z', 'web', true],
    ['\\Aweb\\z', 'web1', false],
  ])('%s against %s: %s', (pattern, name, matches) => {
    expect(new CertDenyList([pattern]).match(name) !== undefined).toBe(matches);
  });

  it('refuses a pattern JavaScript cannot compile, naming it', () => {
    expect(() => compileDenyPattern('(')).toThrow(DenyPatternError);
    expect(() => compileDenyPattern('(?U)x')).toThrow('invalid pattern "(?U)x": flag U is not supported');
  });
});
