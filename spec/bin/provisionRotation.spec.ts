import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PROVISIONER, PROVISIONING_SERVER, choriaAccountsConfig } from '../helpers/choriaBroker';
import { ChoriaLoginProxy, startChoriaLoginProxy } from '../helpers/choriaLoginProxy';
import { OrganisationIssuer, SiteDir, clientCredentials, organisationIssuer, siteDir } from '../helpers/choriaSite';
import { SpecDnsServer, startDnsServer } from '../helpers/dnsServer';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { TestCa, createTestCa } from '../helpers/testCa';
import { waitFor } from '../helpers/waitFor';
import { NatsServerProcess, freePort, startNatsServer } from '../../streams/natsServerProcess';

// A site's first month: certificates and tokens are renewed on disk, brokers restart and move.
// rxfleet reads every credential (and the SRV records) again at each reconnection, as go-choria
// does for every connection, so none of this needs a restart of rxfleet.
describe('rxfleet provision across credential renewals and broker restarts', () => {
  let site: SiteDir;
  const running: RxfleetProcess[] = [];
  const brokers: NatsServerProcess[] = [];

  beforeAll(() => {
    site = siteDir('rxfleet-rotation-');
  });
  afterEach(async () => {
    await killAll(running.splice(0));
    for (const broker of brokers.splice(0)) await broker.stop();
  });
  afterAll(() => site.remove());

  const monitor = async (port: number, path = '/ready'): Promise<{ status: number; body: string }> =>
    fetch(`http://127.0.0.1:${port}${path}`).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      () => ({ status: 0, body: '' }),
    );
  const provisionerYaml = async (name: string, extra: string[] = []): Promise<{ config: string; port: number }> => {
    const port = await freePort();
    const config = site.file(
      `${name}/provisioner.yaml`,
      [`helper: ${MINIMAL_HELPER}`, 'token: tok-rot', `monitor_port: ${port}`, ...extra].join('\n'),
    );
    return { config, port };
  };
  const fleet = async (url: string, nodes: number, extra: string[] = []): Promise<Record<string, unknown>> => {
    const simulate = startRxfleet([
      'simulate',
      '--nats',
      url,
      '--nodes',
      String(nodes),
      '--token',
      'tok-rot',
      '--restart-delay',
      '100ms',
      '--exit-when-provisioned',
      '--json',
      '--report-every',
      '0',
      ...extra,
    ]);
    running.push(simulate);
    expect((await simulate.exited).code).toBe(0);
    return simulate.lines.find((l) => l.type === 'summary') as Record<string, unknown>;
  };

  it('a rotated CA and client certificate, with the broker restarted trusting only the new CA', async () => {
    const oldCa = await createTestCa('old site CA');
    const newCa = await createTestCa('new site CA');
    const brokerFiles = async (ca: TestCa): Promise<void> => {
      const cert = await ca.issue('broker.example.net', { dns: ['localhost'], ip: ['127.0.0.1'] });
      site.file('tls/broker.pem', cert.cert);
      site.file('tls/broker-key.pem', cert.key);
      site.file('tls/broker-ca.pem', ca.cert);
    };
    const clientFiles = async (ca: TestCa, notAfter: Date): Promise<void> => {
      const cert = await ca.issue('prov.mcollective', { dns: ['prov.mcollective'], notAfter });
      site.file('tls/client.pem', cert.cert);
      site.file('tls/client-key.pem', cert.key);
      site.file('tls/ca.pem', ca.cert);
    };
    await brokerFiles(oldCa);
    await clientFiles(oldCa, new Date(Date.now() + 86_400_000));
    const broker = await startNatsServer({
      jetstream: false,
      config: `${choriaAccountsConfig}\ntls {\n  cert_file: "${site.path}/tls/broker.pem"\n  key_file: "${site.path}/tls/broker-key.pem"\n  ca_file: "${site.path}/tls/broker-ca.pem"\n  verify: true\n}\n`,
    });
    brokers.push(broker);
    const { config, port } = await provisionerYaml('tls', [`broker_provisioning_password: ${PROVISIONER.password}`]);
    const choria = site.file(
      'tls/choria.cfg',
      [
        'identity = prov.example.net',
        `plugin.choria.middleware_hosts = ${broker.url}`,
        'plugin.security.provider = file',
        `plugin.security.file.certificate = ${site.path}/tls/client.pem`,
        `plugin.security.file.key = ${site.path}/tls/client-key.pem`,
        `plugin.security.file.ca = ${site.path}/tls/ca.pem`,
      ].join('\n'),
    );
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choria], {
      env: { MCOLLECTIVE_CERTNAME: 'prov.mcollective' },
    });
    running.push(provisioner);
    await waitFor(async () => (await monitor(port)).status === 200, 'the provisioner to be ready', 20_000);
    // A certificate valid a day is within the 14 days' warning.
    await provisioner.next(
      (l) => l.level === 40 && String(l.msg).startsWith('tls_certificate credential') && /expires in/.test(String(l.msg)),
    );

    // The site renews everything on disk, then restarts its broker, which now trusts only the new CA.
    const newExpiry = new Date(Date.now() + 3 * 86_400_000);
    await brokerFiles(newCa);
    await clientFiles(newCa, newExpiry);
    await broker.kill();
    await provisioner.next((l) => String(l.msg).startsWith('disconnected from NATS'));
    await broker.restart();
    await provisioner.next((l) => String(l.msg).startsWith('reconnected to NATS'));
    await waitFor(async () => (await monitor(port)).status === 200, 'the provisioner to be ready again', 20_000);
    const changed = provisioner.lines.find(
      (l) => String(l.msg).startsWith('tls_certificate credential') && /changed on disk/.test(String(l.msg)),
    );
    const newFingerprint = new X509Certificate(readFileSync(`${site.path}/tls/client.pem`)).fingerprint256;
    expect(changed).toMatchObject({ kind: 'tls_certificate', fingerprint: newFingerprint });
    // Never the key itself.
    expect(provisioner.stdout()).not.toContain('PRIVATE KEY');
    const metrics = (await monitor(port, '/metrics')).body;
    const exported = Number(/rxfleet_credential_expiry_timestamp_seconds\{kind="tls_certificate"\} (\d+)/.exec(metrics)?.[1]);
    expect(exported).toBe(Math.floor(Date.parse(new X509Certificate(readFileSync(`${site.path}/tls/client.pem`)).validTo) / 1000));

    // The same process provisions through the restarted broker, its requests signed with the new key.
    const summary = await fleet(broker.url, 2, [
      '--nats-ca',
      `${site.path}/tls/broker-ca.pem`,
      '--nats-cert',
      `${site.path}/tls/broker.pem`,
      '--nats-key',
      `${site.path}/tls/broker-key.pem`,
      '--nats-user',
      PROVISIONING_SERVER.user,
      '--nats-password',
      PROVISIONING_SERVER.password,
      '--require-signed',
      '--ca',
      `${site.path}/tls/ca.pem`,
    ]);
    expect(summary).toMatchObject({ nodes: 2, provisioned: 2, signatureRefusals: 0 });
    expect(provisioner.running()).toBe(true);
  }, 90_000);

  describe('an organisation-issuer token renewed on disk between two broker restarts', () => {
    const server = useNatsServer({ jetstream: false, config: choriaAccountsConfig });
    const PASSWORD = 'prov-pw-rot';
    let issuer: OrganisationIssuer;
    let proxy: ChoriaLoginProxy | undefined;
    beforeAll(() => {
      issuer = organisationIssuer();
    });
    afterEach(async () => {
      await proxy?.close();
    });

    it('an expired token is refused and /ready says why; the renewed one is used without a restart', async () => {
      const ca = await createTestCa();
      const brokerCert = await ca.issue('broker.example.net', { dns: ['localhost'], ip: ['127.0.0.1'] });
      const proxyPort = await freePort();
      const startProxy = async (): Promise<ChoriaLoginProxy> =>
        (proxy = await startChoriaLoginProxy({
          upstream: { port: server().port, user: PROVISIONER.user, password: PROVISIONER.password },
          issuer: issuer.publicKey,
          provisionerPassword: PASSWORD,
          tls: brokerCert,
          port: proxyPort,
        }));
      let broker = await startProxy();
      // Long enough for a busy machine to start the daemon and log in before it runs out.
      const expiresAt = new Date(Date.now() + 15_000);
      const first = await clientCredentials(issuer, { expiresAt });
      const tokenFile = site.file('jwt/client.jwt', `${first.token}\n`);
      const seedFile = site.file('jwt/client.seed', first.seedHex);
      const { config, port } = await provisionerYaml('jwt', [`broker_provisioning_password: ${PASSWORD}`]);
      const choria = site.file(
        'jwt/choria.cfg',
        [
          'identity = prov.example.net',
          `plugin.choria.middleware_hosts = ${broker.url}`,
          'plugin.security.provider = choria',
          `plugin.security.choria.token_file = ${tokenFile}`,
          `plugin.security.choria.seed_file = ${seedFile}`,
        ].join('\n'),
      );
      const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choria]);
      running.push(provisioner);
      await waitFor(async () => (await monitor(port)).status === 200, 'the provisioner to be ready', 20_000);
      expect(broker.logins[0]).toMatchObject({ accepted: true });

      // The token runs out; the broker restarts and refuses it.
      await waitFor(() => Date.now() > expiresAt.getTime() + 1000, 'the token to expire', 25_000);
      await broker.close();
      broker = await startProxy();
      await waitFor(() => broker.logins.length >= 1, 'a refused login', 20_000);
      expect(broker.logins[0]).toMatchObject({ accepted: false });
      let body = '';
      await waitFor(
        async () => {
          const ready = await monitor(port);
          body = ready.body;
          return ready.status === 503 && body.includes('expired');
        },
        '/ready to say why',
        20_000,
      );
      expect((JSON.parse(body) as { login: string }).login).toBe(
        `the broker refused the connection (Authorization Violation): the choria_token credential ${tokenFile} expired at ${new Date(Math.floor(expiresAt.getTime() / 1000) * 1000).toISOString()}`,
      );

      // Renewed on disk (a new key too): the next attempt logs in with it.
      const renewed = await clientCredentials(issuer);
      site.file('jwt/client.jwt', `${renewed.token}\n`);
      site.file('jwt/client.seed', renewed.seedHex);
      await waitFor(async () => (await monitor(port)).status === 200, 'the renewed token to be used', 40_000);
      expect(broker.logins.at(-1)).toMatchObject({ accepted: true, callerId: 'up=provisioner' });
      expect(provisioner.lines.some((l) => l.kind === 'choria_token' && /changed on disk/.test(String(l.msg)))).toBe(true);
      expect(provisioner.stdout()).not.toContain(renewed.token.split('.')[2]);

      // A second restart: the renewed token again, and the fleet is provisioned by the same process.
      await broker.close();
      broker = await startProxy();
      await waitFor(() => broker.logins.some((l) => l.accepted), 'a login after the second restart', 20_000);
      await waitFor(async () => (await monitor(port)).status === 200, 'ready after the second restart', 20_000);
      const summary = await fleet(server().url, 2, [
        '--nats-user',
        PROVISIONING_SERVER.user,
        '--nats-password',
        PROVISIONING_SERVER.password,
      ]);
      expect(summary).toMatchObject({ nodes: 2, provisioned: 2 });
      expect(provisioner.running()).toBe(true);
    }, 120_000);
  });

  describe('SRV records that change between reconnections', () => {
    let dns: SpecDnsServer;
    beforeAll(async () => {
      dns = await startDnsServer();
    });
    afterAll(() => dns.close());

    it('the brokers are looked up again when the connection is lost, and the new one is used', async () => {
      const [a, b] = await Promise.all([startNatsServer({ jetstream: false }), startNatsServer({ jetstream: false })]);
      brokers.push(a, b);
      dns.records.set('_mcollective-server._tcp.moving.test', [{ target: '127.0.0.1.', port: a.port }]);
      const { config, port } = await provisionerYaml('srv', ['choria_insecure: true', `rxfleet: {dns_servers: ["${dns.address}"]}`]);
      const choria = site.file('srv/choria.cfg', ['identity = prov.moving.test', 'plugin.choria.srv_domain = moving.test'].join('\n'));
      const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choria]);
      running.push(provisioner);
      await waitFor(async () => (await monitor(port)).status === 200, 'the provisioner to be ready', 20_000);

      // The site moves its broker: DNS first, then the old one goes away for good.
      dns.records.set('_mcollective-server._tcp.moving.test', [{ target: '127.0.0.1.', port: b.port }]);
      await a.stop();
      const changed = await provisioner.next((l) => String(l.msg).startsWith('the brokers changed'));
      expect(changed.servers).toEqual([`nats://127.0.0.1:${b.port}`]);
      const back = await provisioner.next((l) => String(l.msg).startsWith('reconnected to NATS'));
      expect(String(back.server)).toContain(String(b.port));
      await waitFor(async () => (await monitor(port)).status === 200, 'ready on the new broker', 20_000);
      expect(await fleet(b.url, 2)).toMatchObject({ nodes: 2, provisioned: 2 });
      expect(provisioner.running()).toBe(true);
    }, 60_000);
  });
});
