import { connect } from '@nats-io/transport-node';
import { PROVISIONER, PROVISIONING_SERVER, choriaAccountsConfig } from '../helpers/choriaBroker';
import { SiteDir, siteDir } from '../helpers/choriaSite';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { TestCa, createTestCa } from '../helpers/testCa';
import { waitFor } from '../helpers/waitFor';
import { NatsServerProcess, freePort, startNatsServer } from '../../streams/natsServerProcess';

// A broker that verifies its clients' certificates (nats-server with `verify: true`, the site's
// CA), and a fleet whose provisioning JWT says `chs: true` (`rxfleet simulate --require-signed`):
// the provisioner must present its certificate and sign every request with its key, whether the
// Choria config names the files (the file provider) or the Puppet SSL layout does (puppet).
describe('rxfleet provision with mutual TLS and signed requests', () => {
  let site: SiteDir;
  let ca: TestCa;
  let broker: NatsServerProcess;
  let fleetTls: string[];
  const running: RxfleetProcess[] = [];

  beforeAll(async () => {
    site = siteDir('rxfleet-tls-');
    ca = await createTestCa();
    const [brokerCert, fleetCert] = await Promise.all([
      ca.issue('broker.example.net', { dns: ['localhost'], ip: ['127.0.0.1'] }),
      ca.issue('fleet.example.net'),
    ]);
    const caFile = site.file('ca.pem', ca.cert);
    broker = await startNatsServer({
      jetstream: false,
      config: `${choriaAccountsConfig}\ntls {\n  cert_file: "${site.file('broker.pem', brokerCert.cert)}"\n  key_file: "${site.file('broker-key.pem', brokerCert.key)}"\n  ca_file: "${caFile}"\n  verify: true\n}\n`,
    });
    fleetTls = [
      '--nats-ca',
      caFile,
      '--nats-cert',
      site.file('fleet.pem', fleetCert.cert),
      '--nats-key',
      site.file('fleet-key.pem', fleetCert.key),
    ];
  }, 30_000);
  afterEach(() => killAll(running.splice(0)));
  afterAll(async () => {
    await broker?.stop();
    site.remove();
  });

  const provisionerYaml = async (name: string): Promise<{ config: string; port: number }> => {
    const port = await freePort();
    return {
      port,
      config: site.file(
        `${name}/provisioner.yaml`,
        [
          `helper: ${MINIMAL_HELPER}`,
          'token: tok-tls',
          `broker_provisioning_password: ${PROVISIONER.password}`,
          `monitor_port: ${port}`,
        ].join('\n'),
      ),
    };
  };
  const ready = async (port: number): Promise<number> =>
    fetch(`http://127.0.0.1:${port}/ready`).then(
      (r) => r.status,
      () => 0,
    );
  const strictFleet = (nodes: number, extra: string[] = []): RxfleetProcess => {
    const simulate = startRxfleet([
      'simulate',
      '--nats',
      broker.url,
      ...fleetTls,
      '--nats-user',
      PROVISIONING_SERVER.user,
      '--nats-password',
      PROVISIONING_SERVER.password,
      '--nodes',
      String(nodes),
      '--token',
      'tok-tls',
      '--restart-delay',
      '100ms',
      '--require-signed',
      '--ca',
      site.file('ca.pem', ca.cert),
      '--json',
      '--trace',
      ...extra,
    ]);
    running.push(simulate);
    return simulate;
  };
  const provisionStrictFleet = async (nodes: number): Promise<{ summary: Record<string, unknown>; callers: string[] }> => {
    const simulate = strictFleet(nodes, ['--exit-when-provisioned', '--report-every', '0']);
    expect((await simulate.exited).code).toBe(0);
    return {
      summary: simulate.lines.find((l) => l.type === 'summary') as Record<string, unknown>,
      callers: [...new Set(simulate.lines.filter((l) => l.type === 'request').map((l) => String(l.caller)))],
    };
  };

  it('the broker refuses a client without a certificate (the fixture verifies clients)', async () => {
    await expect(
      connect({
        servers: broker.url,
        user: PROVISIONER.user,
        pass: PROVISIONER.password,
        tls: { ca: ca.cert },
        reconnect: false,
        timeout: 5000,
      }),
    ).rejects.toThrow();
  });

  it('the file provider: its certificate, key and CA; certname from MCOLLECTIVE_CERTNAME; every request signed', async () => {
    const client = await ca.issue('prov.mcollective', { dns: ['prov.mcollective'] });
    const { config, port } = await provisionerYaml('file');
    const choria = site.file(
      'file/choria.cfg',
      [
        'identity = prov.example.net',
        `plugin.choria.middleware_hosts = ${broker.url}`,
        'plugin.security.provider = file',
        `plugin.security.file.certificate = ${site.file('file/cert.pem', client.cert)}`,
        `plugin.security.file.key = ${site.file('file/key.pem', client.key)}`,
        `plugin.security.file.ca = ${site.file('file/ca.pem', ca.cert)}`,
      ].join('\n'),
    );
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choria], {
      env: { MCOLLECTIVE_CERTNAME: 'prov.mcollective' },
    });
    running.push(provisioner);
    await waitFor(async () => (await ready(port)) === 200, 'the provisioner to be ready', 20_000);
    expect(
      provisioner.lines.some(
        (l) =>
          l.msg === 'security provider file: caller choria=prov.mcollective, TLS mutual, verified, requests v1, signed with the x509 key',
      ),
    ).toBe(true);
    const { summary, callers } = await provisionStrictFleet(3);
    expect(summary).toMatchObject({ nodes: 3, provisioned: 3, duplicates: 0, signatureRefusals: 0 });
    expect(callers).toEqual(['choria=prov.mcollective']);
  });

  it('the puppet provider (the default): the Puppet SSL layout of <USER>.mcollective under plugin.choria.ssldir', async () => {
    const client = await ca.issue('ops.mcollective', { dns: ['ops.mcollective'], pkcs1: true });
    site.file('puppet/ssl/certs/ops.mcollective.pem', client.cert);
    site.file('puppet/ssl/private_keys/ops.mcollective.pem', client.key);
    site.file('puppet/ssl/certs/ca.pem', ca.cert);
    const { config, port } = await provisionerYaml('puppet');
    const choria = site.file(
      'puppet/choria.cfg',
      [
        'identity = prov.example.net',
        `plugin.choria.middleware_hosts = ${broker.url}`,
        `plugin.choria.ssldir = ${site.path}/puppet/ssl`,
      ].join('\n'),
    );
    running.push(
      startRxfleet(['provision', '--config', config, '--choria-config', choria], { env: { USER: 'ops', MCOLLECTIVE_CERTNAME: undefined } }),
    );
    await waitFor(async () => (await ready(port)) === 200, 'the provisioner to be ready', 20_000);
    const { summary, callers } = await provisionStrictFleet(2);
    expect(summary).toMatchObject({ nodes: 2, provisioned: 2, duplicates: 0, signatureRefusals: 0 });
    expect(callers).toEqual(['choria=ops.mcollective']);
  });

  it('a strict fleet drops requests signed by a certificate its allow list refuses, as a chs: true server does', async () => {
    // A host name is not a client name (.mcollective, .choria): go-choria's default allow list refuses it.
    const client = await ca.issue('prov.example.net', { dns: ['prov.example.net'] });
    const { config, port } = await provisionerYaml('refused');
    const choria = site.file(
      'refused/choria.cfg',
      [
        'identity = prov.example.net',
        `plugin.choria.middleware_hosts = ${broker.url}`,
        'plugin.security.provider = file',
        `plugin.security.file.certificate = ${site.file('refused/cert.pem', client.cert)}`,
        `plugin.security.file.key = ${site.file('refused/key.pem', client.key)}`,
        `plugin.security.file.ca = ${site.file('refused/ca.pem', ca.cert)}`,
      ].join('\n'),
    );
    running.push(
      startRxfleet(['provision', '--config', config, '--choria-config', choria], { env: { MCOLLECTIVE_CERTNAME: 'prov.example.net' } }),
    );
    await waitFor(async () => (await ready(port)) === 200, 'the provisioner to be ready', 20_000);
    const simulate = strictFleet(1, ['--report-every', '200ms']);
    const refused = await simulate.next((l) => l.type === 'progress' && Number(l.signatureRefusals) > 0);
    expect(refused).toMatchObject({ configured: 0, provisioned: 0 });
  });
});
