import { parseChoriaClientConfig } from '../../../lib/choria/clientConfig';
import { SecurityEnvironment, clientSecurity, defaultPuppetSslDir } from '../../../lib/choria/securityProvider';

const choria = (...lines: string[]) =>
  parseChoriaClientConfig(['identity = prov.example.net', ...lines].join('\n'), { file: 'choria.cfg' }).config;
const present = (...paths: string[]) => ({ exists: (path: string) => paths.includes(path) });
const ROOT: SecurityEnvironment = { root: true };
const USER: SecurityEnvironment = { root: false, user: 'choria', home: '/home/choria' };
const messages = (result: { problems: { severity: string; message: string }[] }) =>
  result.problems.map((p) => `${p.severity}: ${p.message}`);

describe('clientSecurity: the file provider', () => {
  const FILES = [
    'plugin.security.file.certificate = /ssl/cert.pem',
    'plugin.security.file.key = /ssl/key.pem',
    'plugin.security.file.ca = /ssl/ca.pem',
  ];

  it('verified mutual TLS and signed requests from its three files; certname the identity for root', () => {
    const result = clientSecurity(choria(...FILES, 'plugin.security.provider = file'), {
      insecure: false,
      env: ROOT,
      files: present('/ssl/cert.pem', '/ssl/key.pem', '/ssl/ca.pem'),
    });
    expect(result.problems).toEqual([]);
    expect(result.security).toEqual({
      provider: 'file',
      certname: 'prov.example.net',
      tls: { ca: '/ssl/ca.pem', cert: '/ssl/cert.pem', key: '/ssl/key.pem', verify: true },
      x509: { certificate: '/ssl/cert.pem', key: '/ssl/key.pem', ca: '/ssl/ca.pem' },
    });
  });

  it('certname: MCOLLECTIVE_CERTNAME, else <user>.mcollective for a user other than root', () => {
    const files = present('/ssl/cert.pem', '/ssl/key.pem', '/ssl/ca.pem');
    const config = choria(...FILES, 'plugin.security.provider = file');
    expect(clientSecurity(config, { insecure: false, env: USER, files }).security?.certname).toBe('choria.mcollective');
    expect(clientSecurity(config, { insecure: false, env: { ...ROOT, certname: 'prov.mcollective' }, files }).security?.certname).toBe(
      'prov.mcollective',
    );
  });

  it('each file is required and must exist, as go-choria validates it', () => {
    const result = clientSecurity(choria('plugin.security.provider = file', 'plugin.security.file.ca = /gone.pem'), {
      insecure: false,
      env: ROOT,
      files: present(),
    });
    expect(result.security).toBeUndefined();
    expect(messages(result)).toEqual([
      'error: plugin.security.file.certificate is required for TLS to the broker and signed requests with the file security provider (or set choria_insecure: true)',
      'error: plugin.security.file.key is required for TLS to the broker and signed requests with the file security provider (or set choria_insecure: true)',
      'error: plugin.security.file.ca: file "/gone.pem" does not exist',
    ]);
  });
});

describe("clientSecurity: the puppet provider (go-choria's default)", () => {
  it('the Puppet SSL layout under plugin.choria.ssldir, named by plugin.security.certname only where go-choria could name nothing', () => {
    const files = present('/pssl/certs/prov.mcollective.pem', '/pssl/private_keys/prov.mcollective.pem', '/pssl/certs/ca.pem');
    const result = clientSecurity(choria('plugin.choria.ssldir = /pssl', 'plugin.security.certname = prov.mcollective'), {
      insecure: false,
      env: ROOT,
      files,
    });
    expect(messages(result)).toEqual([
      'warning: plugin.security.certname is not a go-choria key: rxfleet names the certificate prov.mcollective by it, where go-choria would refuse to start (neither MCOLLECTIVE_CERTNAME nor USER is set)',
    ]);
    expect(result.security).toEqual({
      provider: 'puppet',
      certname: 'prov.mcollective',
      tls: {
        ca: '/pssl/certs/ca.pem',
        cert: '/pssl/certs/prov.mcollective.pem',
        key: '/pssl/private_keys/prov.mcollective.pem',
        verify: true,
      },
      x509: { certificate: '/pssl/certs/prov.mcollective.pem', key: '/pssl/private_keys/prov.mcollective.pem', ca: '/pssl/certs/ca.pem' },
    });
  });

  it("defaults as go-choria: certname MCOLLECTIVE_CERTNAME, else <USER>.mcollective; ssldir Puppet's for root, ~/.puppetlabs for a user", () => {
    expect(defaultPuppetSslDir(ROOT)).toBe('/etc/puppetlabs/puppet/ssl');
    expect(defaultPuppetSslDir(USER)).toBe('/home/choria/.puppetlabs/etc/puppet/ssl');
    const asUser = clientSecurity(choria(), { insecure: false, env: USER, files: present() });
    expect(messages(asUser)[0]).toBe(
      'error: the puppet security provider needs the certificate "/home/choria/.puppetlabs/etc/puppet/ssl/certs/choria.mcollective.pem" (plugin.choria.ssldir /home/choria/.puppetlabs/etc/puppet/ssl, certname choria.mcollective), which does not exist',
    );
    const overridden = clientSecurity(choria(), {
      insecure: false,
      env: { ...ROOT, user: 'root', certname: 'ops.mcollective' },
      files: present(
        '/etc/puppetlabs/puppet/ssl/certs/ops.mcollective.pem',
        '/etc/puppetlabs/puppet/ssl/private_keys/ops.mcollective.pem',
        '/etc/puppetlabs/puppet/ssl/certs/ca.pem',
      ),
    });
    expect(overridden.problems).toEqual([]);
    expect(overridden.security?.certname).toBe('ops.mcollective');
  });

  it('without a certname to go by, says what to set', () => {
    expect(messages(clientSecurity(choria(), { insecure: false, env: ROOT, files: present() }))).toEqual([
      'error: the puppet security provider cannot name its certificate: set plugin.security.certname here, or MCOLLECTIVE_CERTNAME or USER in the environment (or pick another plugin.security.provider)',
    ]);
  });
});

describe('clientSecurity: the choria provider', () => {
  const BASE = [
    'plugin.security.provider = choria',
    'plugin.security.choria.token_file = /c/client.jwt',
    'plugin.security.choria.seed_file = /c/client.seed',
  ];

  it('TLS encrypted without verification when no CA is configured, and no client certificate', () => {
    const result = clientSecurity(choria(...BASE), { insecure: false, env: ROOT, files: present('/c/client.jwt', '/c/client.seed') });
    expect(result.problems).toEqual([]);
    expect(result.security).toEqual({
      provider: 'choria',
      certname: 'prov.example.net',
      tls: { verify: false },
      jwt: { tokenFile: '/c/client.jwt', seedFile: '/c/client.seed' },
    });
  });

  it('verified mutual TLS when the certificate, key and CA exist', () => {
    const files = present('/c/client.jwt', '/c/client.seed', '/c/cert.pem', '/c/key.pem', '/c/ca.pem');
    const result = clientSecurity(
      choria(
        ...BASE,
        'plugin.security.choria.certificate = /c/cert.pem',
        'plugin.security.choria.key = /c/key.pem',
        'plugin.security.choria.ca = /c/ca.pem',
      ),
      { insecure: false, env: ROOT, files },
    );
    expect(result.security?.tls).toEqual({ ca: '/c/ca.pem', cert: '/c/cert.pem', key: '/c/key.pem', verify: true });
  });

  it('a configured TLS file that is missing is skipped, as go-choria skips it, with a warning', () => {
    const result = clientSecurity(choria(...BASE, 'plugin.security.choria.ca = /c/gone.pem'), {
      insecure: false,
      env: ROOT,
      files: present('/c/client.jwt', '/c/client.seed'),
    });
    expect(result.security?.tls).toEqual({ verify: false });
    expect(messages(result)).toEqual([
      'warning: plugin.security.choria.ca: file "/c/gone.pem" does not exist: the broker\'s certificate is not verified, as go-choria does',
    ]);
  });

  it('the token and the seed are required', () => {
    expect(messages(clientSecurity(choria('plugin.security.provider = choria'), { insecure: false, env: ROOT, files: present() }))).toEqual(
      [
        'error: plugin.security.choria.token_file is required with plugin.security.provider = choria',
        'error: plugin.security.choria.seed_file is required with plugin.security.provider = choria',
      ],
    );
  });
});

describe('clientSecurity: choria_insecure and what rxfleet cannot read', () => {
  it('choria_insecure forces the file provider with no TLS and unsigned requests, whatever is configured, checking nothing', () => {
    for (const provider of ['choria', 'puppet', 'file']) {
      const result = clientSecurity(choria(`plugin.security.provider = ${provider}`), { insecure: true, env: ROOT, files: present() });
      expect(result).toEqual({ security: { provider: 'file', certname: 'prov.example.net' }, problems: [] });
    }
  });
});

describe('clientSecurity: the pkcs11 provider', () => {
  it('the driver and the CA, each required and present; the key and certificate are on the token (certname from it)', () => {
    const result = clientSecurity(
      choria(
        'plugin.security.provider = pkcs11',
        'plugin.security.pkcs11.driver_file = /usr/lib/softhsm/libsofthsm2.so',
        'plugin.security.pkcs11.slot = 1434613542',
        'plugin.security.file.ca = /ssl/ca.pem',
      ),
      {
        insecure: false,
        env: { ...USER, certname: 'ignored.mcollective' },
        files: present('/usr/lib/softhsm/libsofthsm2.so', '/ssl/ca.pem'),
      },
    );
    expect(result).toEqual({
      security: {
        provider: 'pkcs11',
        certname: '',
        tls: { ca: '/ssl/ca.pem', verify: true },
        pkcs11: { driverFile: '/usr/lib/softhsm/libsofthsm2.so', slot: 1434613542, ca: '/ssl/ca.pem' },
      },
      problems: [],
    });
  });

  it('refuses a missing driver or CA as go-choria does, naming the key', () => {
    const result = clientSecurity(choria('plugin.security.provider = pkcs11', 'plugin.security.pkcs11.driver_file = /gone.so'), {
      insecure: false,
      env: ROOT,
      files: present(),
    });
    expect(result.security).toBeUndefined();
    expect(messages(result)).toEqual([
      'error: plugin.security.pkcs11.driver_file: file "/gone.so" does not exist',
      "error: plugin.security.file.ca is required with plugin.security.provider = pkcs11: the broker's certificate is verified against it",
    ]);
  });
});

describe('clientSecurity: the certmanager provider', () => {
  const SSL = ['/cm/cert.pem', '/cm/key.pem', '/cm/ca.pem'];

  it("cert.pem, key.pem and ca.pem in plugin.choria.ssldir, used as the file provider's; certname MCOLLECTIVE_CERTNAME, else the identity", () => {
    const config = choria(
      'plugin.security.provider = certmanager',
      'plugin.choria.ssldir = /cm',
      'plugin.security.certmanager.issuer = ca',
    );
    const result = clientSecurity(config, { insecure: false, env: USER, files: present('/cm', ...SSL) });
    expect(result).toEqual({
      security: {
        provider: 'certmanager',
        certname: 'prov.example.net',
        tls: { ca: '/cm/ca.pem', cert: '/cm/cert.pem', key: '/cm/key.pem', verify: true },
        x509: { certificate: '/cm/cert.pem', key: '/cm/key.pem', ca: '/cm/ca.pem' },
      },
      problems: [],
    });
    const named = clientSecurity(config, {
      insecure: false,
      env: { ...USER, certname: 'pod-7.mcollective' },
      files: present('/cm', ...SSL),
    });
    expect(named.security?.certname).toBe('pod-7.mcollective');
  });

  it('without plugin.choria.ssldir, or with a file missing (go-choria would enroll through the Kubernetes API), refuses naming it', () => {
    expect(
      messages(clientSecurity(choria('plugin.security.provider = certmanager'), { insecure: false, env: ROOT, files: present() })),
    ).toEqual([
      'error: plugin.choria.ssldir is required with plugin.security.provider = certmanager: the directory holding cert.pem, key.pem and ca.pem',
    ]);
    expect(
      messages(
        clientSecurity(choria('plugin.security.provider = certmanager', 'plugin.choria.ssldir = /cm'), {
          insecure: false,
          env: ROOT,
          files: present(),
        }),
      ),
    ).toEqual(['error: /cm does not exist or is not a directory (plugin.choria.ssldir)']);
    const missing = clientSecurity(choria('plugin.security.provider = certmanager', 'plugin.choria.ssldir = /cm'), {
      insecure: false,
      env: ROOT,
      files: present('/cm', '/cm/key.pem', '/cm/ca.pem'),
    });
    expect(missing.security).toBeUndefined();
    expect(messages(missing)).toEqual([
      'error: the certmanager security provider needs the certificate "/cm/cert.pem" (plugin.choria.ssldir /cm), which does not exist: go-choria would enroll with cert-manager through the Kubernetes API to make it, rxfleet does not (run "choria enroll" with this configuration once where the Kubernetes API is reachable, or write the file there)',
    ]);
  });
});
