import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseChoriaClientConfig } from '../../../lib/choria/clientConfig';
import { clientSecurity } from '../../../lib/choria/securityProvider';
import { choriaDropIns, hostFqdn, loadChoriaClientConfig } from '../../../streams/choria/clientConfigFile';

// The whole client configuration as go-choria reads it: plugin.d/choria.cfg, the environment
// overrides, the middleware host forms, connect_timeout, and the keys rxfleet warns about.
describe('the Choria client configuration beyond its one file', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-choria-cfg-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("takes the host's fully qualified name as the identity only when the file names none (or an empty one)", async () => {
    const named = join(dir, 'named.cfg');
    writeFileSync(named, 'identity = prov.example.net\n');
    const unnamed = join(dir, 'unnamed.cfg');
    writeFileSync(unnamed, 'identity =\nplugin.choria.middleware_hosts = b1:4222\n');
    const options = { env: {}, home: '/home/nobody', cwd: dir };
    expect((await loadChoriaClientConfig(named, options)).config.identity).toBe('prov.example.net');
    const fallback = await loadChoriaClientConfig(unnamed, options);
    expect(fallback.config.identity).toBe(await hostFqdn());
    expect(fallback.config.middlewareHosts).toEqual(['nats://b1:4222']);
    expect((await loadChoriaClientConfig(unnamed, { ...options, defaultIdentity: 'given.example.net' })).config.identity).toBe(
      'given.example.net',
    );
  });

  it('reads plugin.d/choria.cfg beside the file, its keys under plugin.choria., its lines winning', async () => {
    const etc = join(dir, 'etc');
    mkdirSync(join(etc, 'plugin.d'), { recursive: true });
    const file = join(etc, 'client.conf');
    writeFileSync(file, 'identity = prov.example.net\nplugin.choria.use_srv = true\nplugin.choria.srv_domain = file.test\n');
    writeFileSync(join(etc, 'plugin.d', 'choria.cfg'), 'srv_domain = dropin.test\nmiddleware_hosts = b1:4222\n');
    // Another drop-in only fills go-choria's raw options: no setting rxfleet reads comes from it.
    writeFileSync(join(etc, 'plugin.d', 'security.cfg'), 'provider = file\n');
    const { config, problems } = await loadChoriaClientConfig(file, { defaultIdentity: 'x', env: {}, home: '/home/nobody' });
    expect(problems).toEqual([]);
    expect(config).toMatchObject({ srvDomain: 'dropin.test', middlewareHosts: ['nats://b1:4222'], securityProvider: 'puppet' });
    // A user's own file (under home) has no drop-ins, as upstream.
    expect(choriaDropIns(file, etc)).toEqual([]);
  });

  it('applies MCOLLECTIVE_NATS_* where the key is in a file, and not otherwise; CHORIA_SRV_DOMAIN either way (its key has a default, go-choria 0.30)', () => {
    const env = {
      CHORIA_SRV_DOMAIN: 'env.test',
      MCOLLECTIVE_NATS_USERNAME: 'env-user',
      MCOLLECTIVE_NATS_PASSWORD: 'env-pass',
      MCOLLECTIVE_NATS_CREDENTIALS: '/env.creds',
    };
    const inFile = parseChoriaClientConfig(
      ['plugin.choria.srv_domain = file.test', 'plugin.nats.user = u', 'plugin.nats.pass = p', 'plugin.nats.credentials = /f.creds'].join(
        '\n',
      ),
      { env },
    ).config;
    expect(inFile).toMatchObject({ srvDomain: 'env.test', natsUser: 'env-user', natsPassword: 'env-pass', natsCredentials: '/env.creds' });
    const notInFile = parseChoriaClientConfig('identity = a', { env }).config;
    expect(notInFile).toMatchObject({ srvDomain: 'env.test', natsUser: undefined, natsPassword: undefined, natsCredentials: undefined });
    expect(parseChoriaClientConfig('identity = a', { env: {} }).config.srvDomain).toBeUndefined();
    // Each one on its own.
    for (const [key, variable, field] of [
      ['plugin.choria.srv_domain', 'CHORIA_SRV_DOMAIN', 'srvDomain'],
      ['plugin.nats.user', 'MCOLLECTIVE_NATS_USERNAME', 'natsUser'],
      ['plugin.nats.pass', 'MCOLLECTIVE_NATS_PASSWORD', 'natsPassword'],
      ['plugin.nats.credentials', 'MCOLLECTIVE_NATS_CREDENTIALS', 'natsCredentials'],
    ] as const) {
      expect(parseChoriaClientConfig(`${key} = from-file`, { env: { [variable]: 'from-env' } }).config[field]).toBe('from-env');
    }
  });

  it("reads the project's choria.conf files from the root down to the working directory, the nearest winning, after the file and its drop-ins", async () => {
    const etc = join(dir, 'project-etc');
    mkdirSync(etc, { recursive: true });
    const file = join(etc, 'client.conf');
    writeFileSync(file, 'identity = prov.example.net\nplugin.choria.srv_domain = file.test\nplugin.choria.middleware_hosts = b1:4222\n');
    const project = join(dir, 'work', 'project');
    const deeper = join(project, 'sub');
    mkdirSync(deeper, { recursive: true });
    writeFileSync(join(dir, 'work', 'choria.conf'), 'plugin.choria.srv_domain = outer.test\nplugin.choria.discovery_timeout = 3\n');
    writeFileSync(join(project, 'choria.conf'), 'plugin.choria.srv_domain = project.test\n');
    const nearest = await loadChoriaClientConfig(file, { defaultIdentity: 'x', env: {}, home: '/home/nobody', cwd: deeper });
    expect(nearest.problems).toEqual([]);
    expect(nearest.config).toMatchObject({ identity: 'prov.example.net', srvDomain: 'project.test', middlewareHosts: ['nats://b1:4222'] });
    const outer = await loadChoriaClientConfig(file, { defaultIdentity: 'x', env: {}, home: '/home/nobody', cwd: join(dir, 'work') });
    expect(outer.config.srvDomain).toBe('outer.test');
    const none = await loadChoriaClientConfig(file, { defaultIdentity: 'x', env: {}, home: '/home/nobody', cwd: etc });
    expect(none.config.srvDomain).toBe('file.test');
  });

  it('middleware_hosts: nats://user:pass@host:port loses its credentials with a warning; a host without a port warns too', () => {
    const { config, problems } = parseChoriaClientConfig(
      'plugin.choria.middleware_hosts = nats://prov:Zq9-secret@b1:4222, b2, tls://b3:4443',
      { file: 'c.cfg' },
    );
    expect(config.middlewareHosts).toEqual(['nats://b1:4222', 'nats://b2:4222', 'tls://b3:4443']);
    expect(problems).toEqual([
      {
        path: 'c.cfg:1 plugin.choria.middleware_hosts',
        severity: 'warning',
        message: "b2 without a port: go-choria refuses it; rxfleet uses NATS's 4222",
      },
      {
        path: 'c.cfg:1 plugin.choria.middleware_hosts',
        severity: 'warning',
        message:
          'user:password in a host is dropped, as go-choria drops it: the login is plugin.nats.user and plugin.nats.pass (or the provisioner file)',
      },
    ]);
    expect(JSON.stringify(problems)).not.toContain('Zq9-secret');
  });

  it('plugin.choria.network.connect_timeout is the connection timeout, at most 120 s as go-choria', () => {
    expect(parseChoriaClientConfig('').config.connectTimeoutMs).toBe(2000);
    expect(parseChoriaClientConfig('plugin.choria.network.connect_timeout = 10s').config.connectTimeoutMs).toBe(10_000);
    expect(parseChoriaClientConfig('plugin.choria.network.connect_timeout = 3m', { file: 'c.cfg' }).problems).toEqual([
      {
        path: 'c.cfg:1 plugin.choria.network.connect_timeout',
        severity: 'error',
        message: 'must not exceed 120 seconds (go-choria refuses to connect)',
      },
    ]);
  });

  it.each([
    ['plugin.choria.security.request_signer.url = https://signer', 'rxfleet has no remote request signer'],
    ['plugin.choria.security.request_signer.token_file = /t', 'rxfleet has no remote request signer'],
    ['plugin.security.client_anon_tls = true', 'rxfleet does not make anonymous TLS connections from this key'],
    ['plugin.choria.federation.collectives = a,b', 'rxfleet does not use Choria federation'],
    ['plugin.choria.federation_middleware_hosts = f:4222', 'rxfleet does not use Choria federation'],
  ])('warns once about %s, naming the key and what rxfleet does instead', (line, instead) => {
    const key = line.split(' = ')[0];
    const { problems } = parseChoriaClientConfig(`identity = a\n${line}`, { file: 'c.cfg' });
    expect(problems).toEqual([
      {
        path: `c.cfg:2 ${key}`,
        severity: 'warning',
        message: expect.stringContaining(`go-choria reads this key; rxfleet cannot honour it: ${instead}`),
      },
    ]);
  });

  it('plugin.security.certname and plugin.security.puppet.ssldir never change the certname go-choria chooses', () => {
    const { config, problems } = parseChoriaClientConfig(
      'plugin.security.certname = other.example.net\nplugin.security.puppet.ssldir = /pssl',
      { file: 'c.cfg' },
    );
    expect(problems.map((p) => p.path)).toEqual(['c.cfg:2 plugin.security.puppet.ssldir']);
    const files = { exists: () => true, read: () => Buffer.from('') };
    const asOps = clientSecurity(config, { insecure: false, env: { root: false, user: 'ops' }, files });
    expect(asOps.security?.certname).toBe('ops.mcollective');
    expect(asOps.problems.map((p) => p.message)).toEqual([
      'plugin.security.certname is not a go-choria key and does not change the certname: ops.mcollective (MCOLLECTIVE_CERTNAME, else <USER>.mcollective), as go-choria chooses it',
    ]);
    // root too: go-choria's puppet provider takes <USER>.mcollective whoever runs it.
    expect(clientSecurity(config, { insecure: false, env: { root: true, user: 'root' }, files }).security?.certname).toBe(
      'root.mcollective',
    );
    expect(
      clientSecurity(config, { insecure: false, env: { root: true, user: 'root', certname: 'c.example.net' }, files }).security?.certname,
    ).toBe('c.example.net');
  });
});
