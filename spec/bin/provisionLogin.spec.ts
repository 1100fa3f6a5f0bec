import { PROVISIONER, PROVISIONING_SERVER, choriaAccountsConfig } from '../helpers/choriaBroker';
import { ChoriaLoginProxy, startChoriaLoginProxy } from '../helpers/choriaLoginProxy';
import { OrganisationIssuer, SiteDir, clientCredentials, organisationIssuer, siteDir } from '../helpers/choriaSite';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { IssuedCertificate, TestCa, createTestCa } from '../helpers/testCa';
import { waitFor } from '../helpers/waitFor';
import { freePort } from '../../streams/natsServerProcess';

// Organisation-issuer sites (go-choria's `choria` security provider): the broker wants the
// provisioner's client JWT as the connection token and the server's nonce signed with the client's
// seed. A real nats-server carries the traffic; in front of it a protocol-level check of the
// CONNECT frame stands in for go-choria's broker (spec/helpers/choriaLoginProxy.ts).
describe('rxfleet provision logs in to a Choria broker with an organisation issuer', () => {
  const server = useNatsServer({ jetstream: false, config: choriaAccountsConfig });
  const PROVISIONING_PASSWORD = 'prov-pw-5566';
  let site: SiteDir;
  let ca: TestCa;
  let brokerCert: IssuedCertificate;
  let issuer: OrganisationIssuer;
  const proxies: ChoriaLoginProxy[] = [];
  const running: RxfleetProcess[] = [];

  beforeAll(async () => {
    site = siteDir('rxfleet-login-');
    ca = await createTestCa();
    brokerCert = await ca.issue('broker.example.net', { dns: ['localhost'], ip: ['127.0.0.1'] });
    issuer = organisationIssuer();
  }, 30_000);
  afterEach(async () => {
    await killAll(running.splice(0));
    for (const proxy of proxies.splice(0)) await proxy.close();
  });
  afterAll(() => site.remove());

  const proxy = async (tls: { ca?: string } = {}, login: { issuer?: OrganisationIssuer } = {}): Promise<ChoriaLoginProxy> => {
    const p = await startChoriaLoginProxy({
      upstream: { port: server().port, user: PROVISIONER.user, password: PROVISIONER.password },
      issuer: (login.issuer ?? issuer).publicKey,
      provisionerPassword: PROVISIONING_PASSWORD,
      tls: { cert: brokerCert.cert, key: brokerCert.key, ...tls },
    });
    proxies.push(p);
    return p;
  };

  /** The site's files: the provisioner's YAML and a choria.cfg for the choria provider. */
  const provisionerFiles = async (
    name: string,
    broker: string,
    extraChoria: string[] = [],
    credentials?: { token: string; seedHex: string },
  ) => {
    const { token, seedHex } = credentials ?? (await clientCredentials(issuer));
    const port = await freePort();
    const config = site.file(
      `${name}/provisioner.yaml`,
      [
        `helper: ${MINIMAL_HELPER}`,
        'token: tok-login',
        `broker_provisioning_password: ${PROVISIONING_PASSWORD}`,
        `monitor_port: ${port}`,
        'site: login',
      ].join('\n'),
    );
    const choria = site.file(
      `${name}/choria.cfg`,
      [
        'identity = prov.example.net',
        `plugin.choria.middleware_hosts = ${broker}`,
        'plugin.security.provider = choria',
        `plugin.security.choria.token_file = ${site.file(`${name}/client.jwt`, `${token}\n`)}`,
        `plugin.security.choria.seed_file = ${site.file(`${name}/client.seed`, seedHex)}`,
        ...extraChoria,
      ].join('\n'),
    );
    return { config, choria, port, token };
  };

  const ready = async (port: number): Promise<number> =>
    fetch(`http://127.0.0.1:${port}/ready`).then(
      (r) => r.status,
      () => 0,
    );

  const provisionFleet = async (nodes: number): Promise<{ summary: Record<string, unknown>; callers: string[] }> => {
    const simulate = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nats-user',
      PROVISIONING_SERVER.user,
      '--nats-password',
      PROVISIONING_SERVER.password,
      '--nodes',
      String(nodes),
      '--token',
      'tok-login',
      '--restart-delay',
      '100ms',
      '--exit-when-provisioned',
      '--json',
      '--report-every',
      '0',
      '--trace',
    ]);
    running.push(simulate);
    expect((await simulate.exited).code).toBe(0);
    const lines = simulate.lines;
    return {
      summary: lines.find((l) => l.type === 'summary') as Record<string, unknown>,
      callers: [...new Set(lines.filter((l) => l.type === 'request').map((l) => String(l.caller)))],
    };
  };

  it("anonymous TLS (no CA configured): the JWT as token, the nonce signed, v2 requests as the token's caller", async () => {
    const broker = await proxy();
    const files = await provisionerFiles('anon', broker.url);
    const provisioner = startRxfleet(['provision', '--config', files.config, '--choria-config', files.choria]);
    running.push(provisioner);
    await waitFor(async () => (await ready(files.port)) === 200, 'the provisioner to be ready', 20_000);

    expect(broker.logins[0]).toEqual({ accepted: true, user: 'provisioner', callerId: 'up=provisioner' });
    expect(
      provisioner.lines.some(
        (l) => l.msg === 'security provider choria: caller up=provisioner, TLS encrypted, not verified, requests v2, signed with the seed',
      ),
    ).toBe(true);
    const { summary, callers } = await provisionFleet(3);
    expect(summary).toMatchObject({ nodes: 3, provisioned: 3, duplicates: 0 });
    // Every request came from the caller the token names (go-choria's CallerID with this provider).
    expect(callers).toEqual(['up=provisioner']);
    // Neither the provisioning token nor the client JWT reaches the log.
    expect(provisioner.stdout()).not.toContain('tok-login');
    expect(provisioner.stdout()).not.toContain(files.token.split('.')[2]);
  });

  it('mutual TLS when the choria provider has a certificate, key and CA: the broker verifies the client', async () => {
    const broker = await proxy({ ca: ca.cert });
    const client = await ca.issue('prov.example.net', { dns: ['prov.example.net'] });
    const files = await provisionerFiles('mtls', broker.url, [
      `plugin.security.choria.certificate = ${site.file('mtls/cert.pem', client.cert)}`,
      `plugin.security.choria.key = ${site.file('mtls/key.pem', client.key)}`,
      `plugin.security.choria.ca = ${site.file('mtls/ca.pem', ca.cert)}`,
    ]);
    const provisioner = startRxfleet(['provision', '--config', files.config, '--choria-config', files.choria]);
    running.push(provisioner);
    await waitFor(async () => (await ready(files.port)) === 200, 'the provisioner to be ready', 20_000);
    expect(broker.logins[0]).toEqual({
      accepted: true,
      user: 'provisioner',
      callerId: 'up=provisioner',
      clientCertificate: 'prov.example.net',
    });
    expect((await provisionFleet(2)).summary).toMatchObject({ provisioned: 2, duplicates: 0 });
  });

  it("a token the broker's issuer did not sign is refused at every attempt, and the daemon stays not ready", async () => {
    const broker = await proxy();
    const stranger = organisationIssuer();
    const files = await provisionerFiles('stranger', broker.url, [], await clientCredentials(stranger));
    const provisioner = startRxfleet(['provision', '--config', files.config, '--choria-config', files.choria]);
    running.push(provisioner);
    await waitFor(() => broker.logins.length >= 2, 'two login attempts', 20_000);
    expect(broker.logins.every((l) => !l.accepted && l.reason?.startsWith('failed to parse client token issued by the choria chain'))).toBe(
      true,
    );
    expect(await ready(files.port)).toBe(503);
    expect(provisioner.running()).toBe(true);
  });

  it("a token without the provisioner permission is refused as go-choria's broker refuses it", async () => {
    const broker = await proxy();
    const files = await provisionerFiles(
      'noperm',
      broker.url,
      [],
      await clientCredentials(issuer, { permissions: { streams_user: true } }),
    );
    const provisioner = startRxfleet(['provision', '--config', files.config, '--choria-config', files.choria]);
    running.push(provisioner);
    await waitFor(() => broker.logins.length >= 1, 'a login attempt', 20_000);
    expect(broker.logins[0]).toEqual({
      accepted: false,
      user: 'provisioner',
      reason: "provisioner claim is false in token with caller id 'up=provisioner'",
    });
  });
});
