import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseChoriaClientConfig, parseMiddlewareHosts } from '../../../lib/choria/clientConfig';
import { defaultChoriaConfigPath, hostFqdn, loadChoriaClientConfig } from '../../../streams/choria/clientConfigFile';

describe('parseChoriaClientConfig', () => {
  it('reads the keys the provisioner uses, ignoring comments, blank lines and other keys', () => {
    const { config, problems } = parseChoriaClientConfig(
      [
        '# the provisioner identity',
        'identity = prov1.example.net',
        '',
        '  plugin.choria.middleware_hosts = broker1:4222, nats://broker2:4223 ,tls://[::1]:4224',
        'plugin.security.provider=file',
        'plugin.security.file.certificate = /etc/choria/cert.pem',
        'plugin.security.file.key = /etc/choria/key.pem',
        'plugin.security.file.ca = /etc/choria/ca.pem',
        'plugin.choria.some_other_plugin = whatever',
        'discovery_timeout = 5',
      ].join('\n'),
      { file: 'client.cfg', defaultIdentity: 'unused' },
    );
    expect(problems).toEqual([]);
    expect(config).toEqual({
      file: 'client.cfg',
      identity: 'prov1.example.net',
      middlewareHosts: ['nats://broker1:4222', 'nats://broker2:4223', 'tls://[::1]:4224'],
      useSrv: true,
      srvDomain: undefined,
      securityProvider: 'file',
      certificate: '/etc/choria/cert.pem',
      key: '/etc/choria/key.pem',
      ca: '/etc/choria/ca.pem',
      choriaCertificate: undefined,
      choriaKey: undefined,
      choriaCa: undefined,
      seedFile: undefined,
      tokenFile: undefined,
      sslDir: undefined,
      certname: undefined,
      pkcs11DriverFile: undefined,
      pkcs11Slot: 0,
      natsUser: undefined,
      natsPassword: undefined,
      natsCredentials: undefined,
      discoveryTimeoutSeconds: 5,
      requestTtlSeconds: 60,
      connectTimeoutMs: 2000,
    });
  });

  it("defaults are go-choria's: the given identity, no middleware, SRV lookups on, the puppet provider, discovery_timeout 2", () => {
    const { config, problems } = parseChoriaClientConfig('', { defaultIdentity: 'host.example.net' });
    expect(problems).toEqual([]);
    expect(config).toMatchObject({
      identity: 'host.example.net',
      middlewareHosts: [],
      useSrv: true,
      securityProvider: 'puppet',
      discoveryTimeoutSeconds: 2,
      requestTtlSeconds: 60,
    });
  });

  it("reads the choria and puppet providers' keys, SRV settings and the NATS login; ~ is the home directory", () => {
    const { config, problems } = parseChoriaClientConfig(
      [
        'plugin.security.provider = choria',
        'plugin.security.choria.certificate = ~/.config/choria/cert.pem',
        'plugin.security.choria.key = /k.pem',
        'plugin.security.choria.ca = /ca.pem',
        'plugin.security.choria.token_file = ~/client.jwt',
        'plugin.security.choria.seed_file = /seed',
        'plugin.choria.ssldir = /var/lib/puppet/ssl',
        'plugin.security.certname = prov.mcollective',
        'plugin.choria.use_srv = no',
        'plugin.choria.srv_domain = example.net',
        'plugin.nats.user = u',
        'plugin.nats.pass = p',
        'plugin.nats.credentials = ~/u.creds',
      ].join('\n'),
      { home: '/home/prov' },
    );
    expect(problems).toEqual([]);
    expect(config).toMatchObject({
      securityProvider: 'choria',
      choriaCertificate: '/home/prov/.config/choria/cert.pem',
      choriaKey: '/k.pem',
      choriaCa: '/ca.pem',
      tokenFile: '/home/prov/client.jwt',
      seedFile: '/seed',
      sslDir: '/var/lib/puppet/ssl',
      certname: 'prov.mcollective',
      useSrv: false,
      srvDomain: 'example.net',
      natsUser: 'u',
      natsPassword: 'p',
      natsCredentials: '/home/prov/u.creds',
    });
    expect(parseChoriaClientConfig('plugin.security.puppet.ssldir = /ssl').config.sslDir).toBe('/ssl');
  });

  it('reads booleans as go-choria does; anything else is false, with a warning', () => {
    for (const yes of ['1', 'yes', 'TRUE', 'y', 't'])
      expect(parseChoriaClientConfig(`plugin.choria.use_srv = ${yes}`).config.useSrv).toBe(true);
    for (const no of ['0', 'No', 'false', 'n', 'F'])
      expect(parseChoriaClientConfig(`plugin.choria.use_srv = ${no}`).config.useSrv).toBe(false);
    const { config, problems } = parseChoriaClientConfig('plugin.choria.use_srv = maybe', { file: 'c.cfg' });
    expect(config.useSrv).toBe(false);
    expect(problems).toEqual([
      {
        path: 'c.cfg:1 plugin.choria.use_srv',
        message: 'expected a boolean (true, false, yes, no, 1, 0), got "maybe"; read as false, as go-choria does',
        severity: 'warning',
      },
    ]);
  });

  it("reads the pkcs11 provider's driver (a path, ~ expanded) and slot, refusing a slot that is not a whole number", () => {
    const good = parseChoriaClientConfig('plugin.security.pkcs11.driver_file = ~/lib/p11.so\nplugin.security.pkcs11.slot = 1434613542\n', {
      file: 'c.cfg',
      home: '/home/ops',
    });
    expect(good.problems).toEqual([]);
    expect([good.config.pkcs11DriverFile, good.config.pkcs11Slot]).toEqual(['/home/ops/lib/p11.so', 1434613542]);
    const bad = parseChoriaClientConfig('plugin.security.pkcs11.slot = first\n', { file: 'c.cfg' });
    expect(bad.config.pkcs11Slot).toBe(0);
    expect(bad.problems).toEqual([
      { path: 'c.cfg:1 plugin.security.pkcs11.slot', message: 'expected a whole number, got "first"', severity: 'error' },
    ]);
  });

  it('refuses a security provider go-choria does not know, keeping the default', () => {
    const { config, problems } = parseChoriaClientConfig('plugin.security.provider = ssl', { file: 'c.cfg' });
    expect(config.securityProvider).toBe('puppet');
    expect(problems).toEqual([
      {
        path: 'c.cfg:1 plugin.security.provider',
        message: 'expected one of puppet, file, pkcs11, certmanager, choria, got "ssl"',
        severity: 'error',
      },
    ]);
  });

  it('the last of two lines for a key wins', () => {
    expect(parseChoriaClientConfig('identity = a\nidentity = b\n').config.identity).toBe('b');
  });

  it('collects every problem with its file, line and key, keeping usable defaults', () => {
    const { config, problems } = parseChoriaClientConfig(
      [
        'identity = x',
        'this line has no equals sign',
        'discovery_timeout = soon',
        'plugin.choria.middleware_hosts = good:4222, bad host, http://web:80, b:99999',
      ].join('\n'),
      { file: 'c.cfg' },
    );
    expect(problems).toEqual([
      { path: 'c.cfg:2', message: 'expected "key = value" (a line starting "this"); line ignored', severity: 'warning' },
      { path: 'c.cfg:3 discovery_timeout', message: 'expected a whole number of seconds >= 1, got "soon"', severity: 'error' },
      {
        path: 'c.cfg:4 plugin.choria.middleware_hosts',
        message: 'expected host:port or nats://host:port, got "bad host"',
        severity: 'error',
      },
      {
        path: 'c.cfg:4 plugin.choria.middleware_hosts',
        message: 'expected host:port or nats://host:port, got "http://web:80"',
        severity: 'error',
      },
      {
        path: 'c.cfg:4 plugin.choria.middleware_hosts',
        message: 'expected host:port or nats://host:port, got "b:99999"',
        severity: 'error',
      },
    ]);
    expect(config.discoveryTimeoutSeconds).toBe(2);
    expect(config.middlewareHosts).toEqual(['nats://good:4222']);
  });
});

describe('the Choria client configuration never echoes a secret (issue 14 item 3)', () => {
  it('names only the key of a line that is not key = value, and hides credentials in a broker URL', () => {
    const { problems } = parseChoriaClientConfig(
      [
        'plugin.nats.pass: Zq9-secret',
        'plugin.nats.pass Zq9-secret',
        'plugin.choria.middleware_hosts = nats://prov:Zq9-secret@broker:4222/x',
      ].join('\n'),
      { file: 'c.cfg' },
    );
    expect(problems).toEqual([
      { path: 'c.cfg:1', message: 'expected "key = value" (a line starting "plugin.nats.pass"); line ignored', severity: 'warning' },
      { path: 'c.cfg:2', message: 'expected "key = value" (a line starting "plugin.nats.pass"); line ignored', severity: 'warning' },
      {
        path: 'c.cfg:3 plugin.choria.middleware_hosts',
        message: 'expected host:port or nats://host:port, got "nats://[redacted]@broker:4222/x"',
        severity: 'error',
      },
    ]);
    expect(JSON.stringify(problems)).not.toContain('Zq9');
  });
});

describe('parseMiddlewareHosts', () => {
  it("gives a host without a port NATS's 4222", () => {
    expect(parseMiddlewareHosts('broker')).toEqual({
      urls: ['nats://broker:4222'],
      invalid: [],
      withoutPort: ['broker'],
      withCredentials: 0,
    });
  });
});

describe('defaultChoriaConfigPath (go-choria UserConfig)', () => {
  const order = ['/home/u/.choriarc', '/home/u/.mcollective', '/etc/choria/client.conf', '/usr/local/etc/choria/client.conf'];

  it.each(order.map((path, i) => [path, order.slice(i)]))('picks %s when it is the first that exists', (expected, present) => {
    expect(defaultChoriaConfigPath({ home: '/home/u', exists: (p) => (present as string[]).includes(p) })).toBe(expected);
  });

  it('falls back to the puppetlabs client.cfg even when it does not exist', () => {
    expect(defaultChoriaConfigPath({ home: '/home/u', exists: () => false })).toBe('/etc/puppetlabs/mcollective/client.cfg');
  });
});

describe('loadChoriaClientConfig', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-choria-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a file', async () => {
    const file = join(dir, 'client.cfg');
    writeFileSync(file, 'identity = from.file\n');
    const { config, problems } = await loadChoriaClientConfig(file, { defaultIdentity: 'd' });
    expect(problems).toEqual([]);
    expect(config.identity).toBe('from.file');
    expect(config.file).toBe(file);
  });

  it('a missing file is one error, not a throw', async () => {
    const file = join(dir, 'absent.cfg');
    const { config, problems } = await loadChoriaClientConfig(file, { defaultIdentity: 'd' });
    expect(problems).toEqual([{ path: file, message: 'file not found', severity: 'error' }]);
    expect(config.identity).toBe('d');
  });

  it('without an identity, defaults to the host FQDN', async () => {
    const file = join(dir, 'noid.cfg');
    writeFileSync(file, 'discovery_timeout = 3\n');
    const { config } = await loadChoriaClientConfig(file);
    expect(config.identity).toBe(await hostFqdn());
    expect(config.identity.length).toBeGreaterThan(0);
  });
});
