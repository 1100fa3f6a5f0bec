import { SiteDir, siteDir } from '../helpers/choriaSite';
import { SpecDnsServer, startDnsServer } from '../helpers/dnsServer';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';
import { freePort } from '../../streams/natsServerProcess';

// A site whose choria.cfg lists no broker: go-choria asks DNS for SRV records, and so does
// rxfleet, here of a DNS server the spec runs (rxfleet.dns_servers points the lookup at it).
describe('rxfleet provision finds its brokers in DNS SRV records', () => {
  const server = useNatsServer({ jetstream: false });
  let dns: SpecDnsServer;
  let site: SiteDir;
  const running: RxfleetProcess[] = [];

  beforeAll(async () => {
    dns = await startDnsServer();
    site = siteDir('rxfleet-srv-');
  });
  afterEach(() => killAll(running.splice(0)));
  afterAll(async () => {
    await dns.close();
    site.remove();
  });

  const start = async (name: string, choriaLines: string[]): Promise<{ provisioner: RxfleetProcess; port: number }> => {
    const port = await freePort();
    const config = site.file(
      `${name}.yaml`,
      [`helper: ${MINIMAL_HELPER}`, 'choria_insecure: true', `monitor_port: ${port}`, `rxfleet: {dns_servers: ["${dns.address}"]}`].join(
        '\n',
      ),
    );
    const choria = site.file(`${name}.cfg`, ['identity = prov.example.test', ...choriaLines].join('\n'));
    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choria]);
    running.push(provisioner);
    return { provisioner, port };
  };

  it('_x-puppet-mcollective._tcp in plugin.choria.srv_domain, when _mcollective-server._tcp has none, and provisions through it', async () => {
    dns.records.set('_x-puppet-mcollective._tcp.example.test', [{ target: '127.0.0.1.', port: server().port }]);
    const { provisioner, port } = await start('srv', ['plugin.choria.srv_domain = example.test']);
    await waitFor(
      async () =>
        (await fetch(`http://127.0.0.1:${port}/ready`).then(
          (r) => r.status,
          () => 0,
        )) === 200,
      'the provisioner to be ready',
      20_000,
    );
    expect(dns.asked.slice(0, 2)).toEqual(['_mcollective-server._tcp.example.test', '_x-puppet-mcollective._tcp.example.test']);
    expect(provisioner.lines.find((l) => String(l.msg).startsWith('Found 1 middleware servers'))?.msg).toBe(
      'Found 1 middleware servers from SRV record _x-puppet-mcollective._tcp.example.test',
    );

    const simulate = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nodes',
      '2',
      '--restart-delay',
      '100ms',
      '--exit-when-provisioned',
      '--json',
      '--report-every',
      '0',
    ]);
    running.push(simulate);
    expect((await simulate.exited).code).toBe(0);
    expect(simulate.lines.find((l) => l.type === 'summary')).toMatchObject({ provisioned: 2, duplicates: 0 });
  });

  it('nothing in DNS: puppet:4222, as go-choria, saying why', async () => {
    const { provisioner } = await start('fallback', ['plugin.choria.srv_domain = nowhere.test']);
    const line = await provisioner.next((l) => String(l.msg).startsWith('Could not resolve Middleware Server SRV records'));
    expect(line.msg).toBe(
      'Could not resolve Middleware Server SRV records (_mcollective-server._tcp.nowhere.test: ENOTFOUND; _x-puppet-mcollective._tcp.nowhere.test: ENOTFOUND); using nats://puppet:4222',
    );
    await provisioner.next((l) => l.msg === 'connecting to NATS' && JSON.stringify(l.servers) === '["nats://puppet:4222"]');
  });
});
