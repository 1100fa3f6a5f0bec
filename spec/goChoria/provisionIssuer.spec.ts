import { readFileSync } from 'node:fs';
import { ChoriaSite, startChoriaSite } from '../helpers/goChoria/choriaSite';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

const SERVERS = 20;

// rxfleet provisions real go-choria servers through a real Choria Broker with an organisation
// issuer: the servers' provisioning JWT (signed by the issuer, protocol v2, `chs` set) lets them
// into the broker's provisioning account; rxfleet logs in with its client JWT and the nonce
// signed with its seed, fetches and verifies each server's JWT, has it make an ed25519 key
// (gen25519), signs the server's JWT in a chain with jwt_signing_key and jwt_signing_token, and
// configures it for the `choria` security provider. Restarted, each server logs in with that JWT
// and answers the operator's `choria ping`, whose client JWT the same issuer signed.
describe('rxfleet provision against real go-choria servers: organisation issuer (features.ed25519, servers whose provisioning JWT sets chs)', () => {
  let site: ChoriaSite;
  const running: RxfleetProcess[] = [];

  beforeAll(async () => {
    site = await startChoriaSite({ flow: 'issuer', servers: SERVERS });
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
      expect(config).toContain('plugin.security.provider=choria');
      // The server JWT rxfleet signed, in the chain its jwt_signing_token starts, for this identity.
      const claims = JSON.parse(Buffer.from(readFileSync(`${server.dir}/server.jwt`, 'utf8').split('.')[1]!, 'base64url').toString());
      expect(claims).toMatchObject({ purpose: 'choria_server', identity: server.identity });
      expect(String(claims.iss)).toMatch(/^C-/);
      expect(server.log()).toContain('Initiating Choria Server restart');
    }
    // Each server was provisioned once: one configure, one restart.
    const provisioned = provisioner.lines.filter((l) => l.result === 'provisioned').map((l) => l.identity);
    expect([...provisioned].sort()).toEqual([...site.servers.identities].sort());
    // Every restart was the server's own re-exec; none needed the service manager.
    expect(site.servers.servers.map((s) => s.restarts())).toEqual(site.servers.servers.map(() => 0));
  }, 120_000);
});
