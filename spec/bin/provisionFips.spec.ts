import { createHash } from 'node:crypto';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER, sampleValue } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { SiteDir, siteDir } from '../helpers/choriaSite';
import { waitFor } from '../helpers/waitFor';
import { freePort } from '../../streams/natsServerProcess';

const CALLER = 'choria=prov.example.net';
const sha256 = createHash('sha256').update(CALLER).digest('hex');
const md5 = createHash('md5').update(CALLER).digest('hex');

// go-choria 0.30.0 in FIPS 140 mode (GODEBUG=fips140=on) names its reply subjects with the SHA-256
// of the caller id, and a FIPS broker grants a client only `*.reply.<sha256(caller)>.>`. The broker
// here is a nats-server granting the provisioner exactly that (go-choria 0.29.4, the newest the
// project can build, has no FIPS mode), and a simulated fleet answers on whatever reply subject a
// request names: in FIPS mode rxfleet provisions through it, without it its replies never arrive.
describe('FIPS 140 mode: reply subjects under the SHA-256 of the caller id, chosen as go-choria chooses', () => {
  const server = useNatsServer({
    jetstream: false,
    config: `
accounts: {
  A: {
    users: [
      { user: provisioner, password: prov-pw, permissions: { publish: ">", subscribe: ["provisioning.reply.${sha256}.>", "choria.lifecycle.>"] } }
      { user: fleet, password: fleet-pw }
    ]
  }
}`,
  });
  let site: SiteDir;
  const running: RxfleetProcess[] = [];
  beforeAll(() => (site = siteDir('rxfleet-fips-')));
  afterEach(() => killAll(running.splice(0)));
  afterAll(() => site.remove());

  const start = async (name: string, env: Record<string, string | undefined>): Promise<{ provisioner: RxfleetProcess; port: number }> => {
    const port = await freePort();
    const config = site.file(
      `${name}.yaml`,
      [
        `helper: ${MINIMAL_HELPER}`,
        'choria_insecure: true',
        `monitor_port: ${port}`,
        'site: fips',
        'rxfleet: {nats_user: provisioner, nats_password: prov-pw}',
      ].join('\n'),
    );
    const choria = site.file(`${name}.cfg`, `identity = prov.example.net\nplugin.choria.middleware_hosts = ${server().url}\n`);
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choria], { env });
    running.push(provisioner);
    return { provisioner, port };
  };

  const fleet = (): RxfleetProcess => {
    const simulate = startRxfleet(
      [
        'simulate',
        '--nats',
        server().url,
        '--nats-user',
        'fleet',
        '--nodes',
        '4',
        '--restart-delay',
        '50ms',
        '--json',
        '--report-every',
        '0',
      ],
      { env: { RXFLEET_NATS_PASSWORD: 'fleet-pw' } },
    );
    running.push(simulate);
    return simulate;
  };

  const provisioned = async (port: number): Promise<number> =>
    sampleValue(
      await await fetch(`http://127.0.0.1:${port}/metrics`).then(
        (r) => r.text(),
        () => '',
      ),
      'choria_provisioner_provisioned',
      { site: 'fips' },
    );

  it('with GODEBUG=fips140=on: replies under the SHA-256, which the broker grants, and the fleet is provisioned', async () => {
    const { provisioner, port } = await start('on', { GODEBUG: 'fips140=on' });
    const line = await provisioner.next((l) => String(l.msg).startsWith('security provider'));
    expect(line.msg).toBe(
      `security provider file: caller ${CALLER}, TLS off, requests v1, unsigned, replies under sha256 of the caller (FIPS 140 mode: GODEBUG=fips140=on)`,
    );
    fleet();
    await waitFor(async () => (await provisioned(port)) === 4, 'all four nodes provisioned', 30_000);
  });

  it(`without it: MD5 (${md5.slice(0, 8)}...), which a FIPS broker refuses, so no reply ever arrives`, async () => {
    const { provisioner, port } = await start('off', { GODEBUG: undefined });
    const line = await provisioner.next((l) => String(l.msg).startsWith('security provider'));
    expect(line.msg).toBe(`security provider file: caller ${CALLER}, TLS off, requests v1, unsigned`);
    fleet();
    // Each node's first request times out: its inventory is an RPC error, not a provisioned node.
    await waitFor(
      async () =>
        sampleValue(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), 'choria_provisioner_rpc_errors', {
          site: 'fips',
          rpc: 'rpcutil#inventory',
        }) >= 1,
      'an RPC error',
      60_000,
    );
    expect(await provisioned(port)).toBe(0);
  });
});
