import { generateKeyPairSync, verify } from 'node:crypto';
import { SignJWT } from 'jose';
import { parseChoriaClientConfig } from '../../../lib/choria/clientConfig';
import { ed25519PublicKeyFromRaw } from '../../../lib/choria/ed25519Keys';
import { md5Hex } from '../../../lib/choria/protocol/encoding';
import { SiteFiles } from '../../../lib/siteFiles';
import { parseProvisionerConfig, requireValidConfig } from '../../../lib/provision/config/config';
import { connectionPlan } from '../../../streams/choria/connectionPlan';
import { IssuedCertificate, TestCa, createTestCa } from '../../helpers/testCa';

const provisioner = (...lines: string[]) => requireValidConfig(parseProvisionerConfig(['helper: /bin/h', ...lines].join('\n')));
const choria = (...lines: string[]) =>
  parseChoriaClientConfig(['identity = prov.example.net', ...lines].join('\n'), { file: 'choria.cfg' }).config;
const ROOT = { root: true };
const files = (entries: Record<string, string | Buffer>): SiteFiles => ({
  read: (path) => {
    if (!(path in entries)) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' });
    return Buffer.from(entries[path]);
  },
  exists: (path) => path in entries,
});
const problems = (plan: { problems: { severity: string; path: string; message: string }[] }) =>
  plan.problems.map((p) => `${p.severity} ${p.path}: ${p.message}`);

/** A client JWT as `choria jwt client` makes one: purpose, caller id, public key, provisioner permission. */
async function clientJwt(
  claims: Record<string, unknown> = {},
  expiresIn = '1h',
): Promise<{ token: string; seedHex: string; publicKey: Buffer }> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const issuer = generateKeyPairSync('ed25519').privateKey;
  const token = await new SignJWT({
    purpose: 'choria_client_id',
    callerid: 'up=provisioner',
    public_key: raw.toString('hex'),
    ou: 'choria',
    permissions: { provisioner: true },
    ...claims,
  })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(expiresIn)
    .sign(issuer);
  return { token, seedHex: privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32).toString('hex'), publicKey: raw };
}

describe('connectionPlan', () => {
  let ca: TestCa;
  let client: IssuedCertificate;
  beforeAll(async () => {
    ca = await createTestCa();
    client = await ca.issue('prov.example.net', { dns: ['prov.example.net'] });
  }, 30_000);
  const x509Files = () => files({ '/ssl/cert.pem': client.cert, '/ssl/key.pem': client.key, '/ssl/ca.pem': ca.cert });
  const FILE_PROVIDER = [
    'plugin.security.provider = file',
    'plugin.security.file.certificate = /ssl/cert.pem',
    'plugin.security.file.key = /ssl/key.pem',
    'plugin.security.file.ca = /ssl/ca.pem',
  ];

  it('as upstream with the file provider: listed brokers, user provisioner, verified mutual TLS, replies under provisioning.reply, v1 signed with the key', () => {
    const plan = connectionPlan(
      provisioner('broker_provisioning_password: pw-1234'),
      choria('plugin.choria.middleware_hosts = b1:4222, nats://b2:4223', ...FILE_PROVIDER),
      { files: x509Files(), env: ROOT },
    );
    expect(plan.problems).toEqual([]);
    expect(plan.brokers).toEqual({ kind: 'listed', servers: ['nats://b1:4222', 'nats://b2:4223'] });
    expect(plan.nats).toEqual({
      servers: ['nats://b1:4222', 'nats://b2:4223'],
      name: 'prov.example.net',
      inboxPrefix: 'provisioning.reply',
      timeoutMs: 2000,
      user: 'provisioner',
      password: 'pw-1234',
      tls: { ca: '/ssl/ca.pem', cert: '/ssl/cert.pem', key: '/ssl/key.pem', verify: true },
    });
    expect(plan.callerId).toBe('choria=prov.example.net');
    if (plan.protocol.version !== 'v1' || plan.protocol.signer === undefined) throw new Error('expected a signed v1 protocol');
    expect(plan.protocol.signer.pubcert()).toBe(client.cert);
  });

  it('choria_insecure: the file provider whatever is configured, no TLS, unsigned v1; the rxfleet section overrides the login', () => {
    const plan = connectionPlan(
      provisioner(
        'choria_insecure: true',
        'broker_provisioning_password: pw',
        'rxfleet: {nats_servers: [x:1], nats_user: u, nats_password: p, nats_credentials: /u.creds}',
      ),
      choria('plugin.choria.middleware_hosts = b1:4222', 'plugin.security.provider = choria'),
      { files: files({ '/u.creds': '' }), env: ROOT },
    );
    expect(plan.problems).toEqual([]);
    expect(plan.nats).toEqual({
      servers: ['x:1'],
      name: 'prov.example.net',
      inboxPrefix: 'provisioning.reply',
      timeoutMs: 2000,
      user: 'u',
      password: 'p',
      credentials: '/u.creds',
    });
    expect(plan.protocol).toEqual({ version: 'v1' });
    expect(plan.security?.provider).toBe('file');
  });

  it('without listed brokers, they come from SRV (or puppet:4222 with use_srv off); plugin.nats.user and .pass log in when the provisioner file sets no password', () => {
    const srv = connectionPlan(
      provisioner('choria_insecure: true'),
      choria('plugin.choria.srv_domain = example.net', 'plugin.nats.user = nu', 'plugin.nats.pass = np'),
      { files: files({}), env: ROOT },
    );
    expect(srv.problems).toEqual([]);
    expect(srv.brokers).toEqual({ kind: 'srv', domain: 'example.net' });
    expect(srv.nats).toMatchObject({ servers: [], user: 'nu', password: 'np' });
    expect(
      connectionPlan(provisioner('choria_insecure: true'), choria('plugin.choria.use_srv = false'), { files: files({}), env: ROOT }).nats
        .servers,
    ).toEqual(['nats://puppet:4222']);
  });

  it("reports every problem: a missing creds file, the default puppet provider's missing files, an unsupported provider", () => {
    const plan = connectionPlan(provisioner('rxfleet: {nats_credentials: /gone.creds}'), choria('plugin.choria.ssldir = /pssl'), {
      files: files({}),
      env: { ...ROOT, certname: 'prov.mcollective' },
    });
    expect(problems(plan)).toEqual([
      'error rxfleet.nats_credentials: file "/gone.creds" does not exist',
      'error choria.cfg: the puppet security provider needs the certificate "/pssl/certs/prov.mcollective.pem" (plugin.choria.ssldir /pssl, certname prov.mcollective), which does not exist',
      'error choria.cfg: the puppet security provider needs the private key "/pssl/private_keys/prov.mcollective.pem" (plugin.choria.ssldir /pssl, certname prov.mcollective), which does not exist',
      'error choria.cfg: the puppet security provider needs the CA "/pssl/certs/ca.pem" (plugin.choria.ssldir /pssl, certname prov.mcollective), which does not exist',
    ]);
    expect(problems(connectionPlan(provisioner(), choria('plugin.security.provider = pkcs11'), { files: files({}), env: ROOT }))).toEqual([
      'error choria.cfg: plugin.security.pkcs11.driver_file is required with plugin.security.provider = pkcs11',
      "error choria.cfg: plugin.security.file.ca is required with plugin.security.provider = pkcs11: the broker's certificate is verified against it",
    ]);
  });

  it('the puppet provider signs with the key of its certname, and the caller id is choria=<certname>', async () => {
    const puppetCert = await ca.issue('prov.mcollective');
    const plan = connectionPlan(provisioner(), choria('plugin.choria.ssldir = /pssl'), {
      files: files({
        '/pssl/certs/prov.mcollective.pem': puppetCert.cert,
        '/pssl/private_keys/prov.mcollective.pem': puppetCert.key,
        '/pssl/certs/ca.pem': ca.cert,
      }),
      env: { ...ROOT, certname: 'prov.mcollective' },
    });
    expect(plan.problems).toEqual([]);
    expect(plan.callerId).toBe('choria=prov.mcollective');
    expect(plan.nats.tls).toEqual({
      ca: '/pssl/certs/ca.pem',
      cert: '/pssl/certs/prov.mcollective.pem',
      key: '/pssl/private_keys/prov.mcollective.pem',
      verify: true,
    });
    expect(plan.protocol.version === 'v1' && plan.protocol.signer?.pubcert()).toBe(puppetCert.cert);
  });

  it('a key go-choria could not sign with is a warning (upstream starts, and every request fails)', async () => {
    const ec = await ca.issue('prov.example.net', { keyType: 'ec' });
    const plan = connectionPlan(provisioner(), choria(...FILE_PROVIDER), {
      files: files({ '/ssl/cert.pem': ec.cert, '/ssl/key.pem': ec.key, '/ssl/ca.pem': ca.cert }),
      env: ROOT,
    });
    expect(problems(plan)).toEqual([
      'warning choria.cfg: requests cannot be signed, so every request will fail, as upstream: could not sign message string: unhandled key type ec in /ssl/key.pem (go-choria signs requests with RSA keys only)',
    ]);
  });

  describe('the choria provider (organisation issuer)', () => {
    const CHORIA = [
      'plugin.choria.middleware_hosts = b:4222',
      'plugin.security.provider = choria',
      'plugin.security.choria.token_file = /c/client.jwt',
      'plugin.security.choria.seed_file = /c/client.seed',
    ];

    it("logs in with the JWT and a signed nonce, replies under the token's inbox, and speaks v2 signed with the seed", async () => {
      const { token, seedHex, publicKey } = await clientJwt();
      const plan = connectionPlan(provisioner('broker_provisioning_password: pw'), choria(...CHORIA), {
        files: files({ '/c/client.jwt': `${token}\n`, '/c/client.seed': seedHex }),
        env: ROOT,
      });
      expect(plan.problems).toEqual([]);
      expect(plan.callerId).toBe('up=provisioner');
      expect(plan.nats).toMatchObject({
        user: 'provisioner',
        password: 'pw',
        inboxPrefix: `provisioning.reply.${md5Hex('up=provisioner')}`,
        tls: { verify: false },
      });
      expect(plan.nats.jwtLogin?.jwt).toBe(token);
      const nonce = Buffer.from('server-nonce-123');
      expect(verify(null, nonce, ed25519PublicKeyFromRaw(publicKey), plan.nats.jwtLogin!.sign(nonce))).toBe(true);
      if (plan.protocol.version !== 'v2') throw new Error('expected v2');
      expect(plan.protocol.security.callerJwt).toBe(token);
      expect(
        verify(null, Buffer.from('{"a":1}'), ed25519PublicKeyFromRaw(publicKey), plan.protocol.security.sign!(Buffer.from('{"a":1}'))),
      ).toBe(true);
    });

    it('a token that cannot log in or a seed that is not one is an error; an expired token a warning', async () => {
      const { token, seedHex } = await clientJwt({ purpose: 'choria_provisioning' });
      expect(
        problems(
          connectionPlan(provisioner(), choria(...CHORIA), { files: files({ '/c/client.jwt': token, '/c/client.seed': '' }), env: ROOT }),
        ),
      ).toEqual([
        'error choria.cfg: plugin.security.choria.token_file: "/c/client.jwt": unsupported token purpose: "choria_provisioning"',
        'error choria.cfg: plugin.security.choria.seed_file: "/c/client.seed": invalid ed25519 seed length: 0 bytes, expected 32',
      ]);
      const expired = await clientJwt({}, '-1m');
      const plan = connectionPlan(provisioner(), choria(...CHORIA), {
        files: files({ '/c/client.jwt': expired.token, '/c/client.seed': seedHex }),
        env: ROOT,
      });
      expect(problems(plan)).toEqual([
        expect.stringMatching(
          /^warning choria.cfg: plugin.security.choria.token_file: the token expired at .*: the broker will refuse every connection until it is renewed$/,
        ),
      ]);
    });
  });
});
