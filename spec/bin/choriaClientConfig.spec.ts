import { chmodSync } from 'node:fs';
import { SiteDir, siteDir } from '../helpers/choriaSite';
import { SpecDnsServer, startDnsServer } from '../helpers/dnsServer';
import { useNatsServer } from '../helpers/nats';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';
import { freePort } from '../../streams/natsServerProcess';

// A site's whole client configuration, as go-choria reads it, through the built command:
// plugin.d/choria.cfg beside the file, CHORIA_SRV_DOMAIN, facter's networking.domain, and the keys
// rxfleet cannot honour, each said in one warning line by validate and provision alike.
describe('rxfleet reads the Choria client configuration as go-choria does', () => {
  const server = useNatsServer({ jetstream: false });
  let site: SiteDir;
  let dns: SpecDnsServer;
  const running: RxfleetProcess[] = [];
  beforeAll(async () => {
    site = siteDir('rxfleet-client-cfg-');
    dns = await startDnsServer();
  });
  afterEach(() => killAll(running.splice(0)));
  afterAll(async () => {
    await dns.close();
    site.remove();
  });

  const provisionerFile = async (name: string): Promise<{ config: string; port: number }> => {
    const port = await freePort();
    const config = site.file(
      `${name}/provisioner.yaml`,
      [`helper: ${MINIMAL_HELPER}`, 'choria_insecure: true', `monitor_port: ${port}`, `rxfleet: {dns_servers: ["${dns.address}"]}`].join(
        '\n',
      ),
    );
    return { config, port };
  };
  const ready = (port: number): Promise<boolean> =>
    fetch(`http://127.0.0.1:${port}/ready`).then(
      (r) => r.status === 200,
      () => false,
    );

  it('validate and provision print one warning per key it cannot honour, naming the key and what it does instead', async () => {
    const { config, port } = await provisionerFile('warned');
    const choria = site.file(
      'warned/choria.cfg',
      [
        'identity = prov.example.net',
        `plugin.choria.middleware_hosts = ${server().url}`,
        'plugin.choria.security.request_signer.url = https://signer.example.net',
        'plugin.security.client_anon_tls = true',
        'plugin.choria.federation.collectives = east,west',
      ].join('\n'),
    );
    const expected = [
      `warning: ${choria}:3 plugin.choria.security.request_signer.url: go-choria reads this key; rxfleet cannot honour it: rxfleet has no remote request signer: requests are signed locally with the security provider (x509 key or the choria seed)`,
      `warning: ${choria}:4 plugin.security.client_anon_tls: go-choria reads this key; rxfleet cannot honour it: rxfleet does not make anonymous TLS connections from this key: TLS follows the security provider (with the choria provider and no CA, the broker is not verified)`,
      `warning: ${choria}:5 plugin.choria.federation.collectives: go-choria reads this key; rxfleet cannot honour it: rxfleet does not use Choria federation: it talks to the brokers it connects to directly`,
    ];
    const validate = startRxfleet(['validate', '--config', config, '--choria-config', choria]);
    running.push(validate);
    const done = await validate.exited;
    expect(done.code).toBe(0);
    const lines = validate.stdout().trim().split('\n');
    expect(lines.filter((l) => l.startsWith('warning: '))).toEqual(expected);
    expect(lines.at(-1)).toContain(': OK with 3 warnings: ');

    const provisioner = startRxfleet(['provision', '--config', config, '--choria-config', choria]);
    running.push(provisioner);
    await waitFor(() => ready(port), 'the provisioner to be ready', 20_000);
    const warned = provisioner.lines.filter((l) => l.level === 40).map((l) => `warning: ${String(l.msg)}`);
    for (const line of expected) expect(warned).toContain(line);
  }, 60_000);

  it("the SRV domain from plugin.d/choria.cfg, replaced by CHORIA_SRV_DOMAIN; without one, facter's networking.domain", async () => {
    dns.records.set('_mcollective-server._tcp.env.test', [{ target: '127.0.0.1.', port: server().port }]);
    dns.records.set('_mcollective-server._tcp.facts.test', [{ target: '127.0.0.1.', port: server().port }]);
    // The drop-in names a domain with no records; the environment replaces it, as confkey does.
    site.file('etc/plugin.d/choria.cfg', 'srv_domain = dropin.test\n');
    const choria = site.file('etc/client.conf', 'identity = prov.example.net\n');
    const first = await provisionerFile('env');
    const withEnv = startRxfleet(['provision', '--config', first.config, '--choria-config', choria], {
      env: { CHORIA_SRV_DOMAIN: 'env.test', HOME: `${site.path}/home` },
    });
    running.push(withEnv);
    await waitFor(() => ready(first.port), 'ready through env.test', 20_000);
    expect(dns.asked).toContain('_mcollective-server._tcp.env.test');
    expect(dns.asked).not.toContain('_mcollective-server._tcp.dropin.test');

    // No domain anywhere in the files: go-choria asks facter, and so does rxfleet.
    const facter = site.file('bin/facter', '#!/bin/sh\n[ "$1" = networking.domain ] && echo facts.test\n');
    chmodSync(facter, 0o755);
    const bare = site.file('bare/client.conf', 'identity = prov.example.net\n');
    const second = await provisionerFile('facter');
    const withFacter = startRxfleet(['provision', '--config', second.config, '--choria-config', bare], {
      env: { PATH: `${site.path}/bin:${process.env.PATH ?? ''}`, HOME: `${site.path}/home` },
    });
    running.push(withFacter);
    await waitFor(() => ready(second.port), 'ready through facts.test', 20_000);
    expect(withFacter.lines.some((l) => l.msg === 'Found 1 middleware servers from SRV record _mcollective-server._tcp.facts.test')).toBe(
      true,
    );
  }, 60_000);
});
