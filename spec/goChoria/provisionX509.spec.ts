import { readFileSync } from 'node:fs';
import { ChoriaSite, startChoriaSite } from '../helpers/goChoria/choriaSite';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

const SERVERS = 20;

// rxfleet provisions real go-choria servers (scripts/go-peers.conf's version) through a real
// Choria Broker, in upstream's x509 flow: each server makes a key and CSR (gencsr), the helper
// signs it with the site's CA, configure writes the certificate, the CA and the new
// configuration, restart re-executes the server, which comes back out of provisioning mode on
// the `file` security provider and answers the operator's `choria ping` with mutual TLS.
describe('rxfleet provision against real go-choria servers: x509 (features.pki)', () => {
  let site: ChoriaSite;
  const running: RxfleetProcess[] = [];

  beforeAll(async () => {
    site = await startChoriaSite({ flow: 'x509', servers: SERVERS });
  }, 60_000);
  afterAll(async () => {
    await killAll(running.splice(0));
    await site?.stop();
  }, 30_000);

  it(`configures all ${SERVERS} servers, which go-choria's client then finds as configured servers`, async () => {
    const yaml = site.dir.file(
      'provisioner.yaml',
      [
        `helper: ${site.helper.command}`,
        'workers: 8',
        'site: spec',
        'monitor_port: 0',
        'leader_election: true',
        ...site.provisionerYaml(),
        '',
      ].join('\n'),
    );
    const provisioner = startRxfleet(['provision', '--config', yaml, '--choria-config', site.provisionerChoriaConfig], {
      env: site.helper.env,
    });
    running.push(provisioner);

    await waitFor(
      async () => (await site.ping(SERVERS)).length === SERVERS,
      `choria ping to find all ${SERVERS} servers configured`,
      90_000,
    );
    expect(await site.ping(SERVERS)).toEqual([...site.servers.identities].sort());

    for (const server of site.servers.servers) {
      const config = readFileSync(server.configFile, 'utf8');
      expect(config).toContain('plugin.choria.server.provision=false');
      expect(config).toContain('plugin.security.provider=file');
      // The CSR's key stayed on the node: the certificate the helper signed is for its identity.
      expect(readFileSync(`${server.dir}/ssl/certificate.pem`, 'utf8')).toContain('BEGIN CERTIFICATE');
      expect(server.log()).toContain('Initiating Choria Server restart');
    }
    // Each server was provisioned once: one configure, one restart.
    const provisioned = provisioner.lines.filter((l) => l.result === 'provisioned').map((l) => l.identity);
    expect([...provisioned].sort()).toEqual([...site.servers.identities].sort());
    // Every restart was the server's own re-exec; none needed the service manager.
    expect(site.servers.servers.map((s) => s.restarts())).toEqual(site.servers.servers.map(() => 0));
  }, 120_000);
});
