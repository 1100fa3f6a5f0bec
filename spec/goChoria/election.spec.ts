import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ChoriaServers, startChoriaServers } from '../helpers/goChoria/choriaServers';
import { ChoriaSite, startChoriaSite } from '../helpers/goChoria/choriaSite';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

const TTL_S = 10;

// Two rxfleet provisioners campaign in the election bucket a real Choria Broker makes
// (CHORIA_LEADER_ELECTION, key provisioner, reached through choria.streams as the broker grants
// it): one leads and provisions the first real servers; it is SIGKILLed; the other takes over
// within the bucket's TTL and provisions the servers that come up after; no server is configured
// twice. (The Go provisioner would stand in the same election; the Go module proxy here refuses
// it, so both candidates are rxfleet: docs/provisioner/switching-from-go.md.)
describe("rxfleet's election on a real Choria Broker's bucket: the leader SIGKILLed, the standby takes over", () => {
  let site: ChoriaSite;
  let late: ChoriaServers | undefined;
  const running: RxfleetProcess[] = [];

  beforeAll(async () => {
    site = await startChoriaSite({ flow: 'x509', servers: 8, electionTtl: `${TTL_S}s` });
  }, 60_000);
  afterAll(async () => {
    await killAll(running.splice(0));
    await late?.stop();
    await site?.stop();
  }, 30_000);

  const provisioner = (name: string): RxfleetProcess => {
    const yaml = site.provisionerConfig(name, ['workers: 4', 'site: spec', 'leader_election: true']);
    const cfg = site.dir.file(
      `${name}.cfg`,
      readFileSync(site.provisionerChoriaConfig, 'utf8').replace('identity = provisioner.mcollective', `identity = ${name}.mcollective`),
    );
    const p = startRxfleet(['provision', '--config', yaml, '--choria-config', cfg], { env: site.helper.env });
    running.push(p);
    return p;
  };

  const rewrites = (servers: ChoriaServers): number[] =>
    servers.servers.map((s) => s.log().split('Rewriting configuration file').length - 1);

  it('one leads and provisions; killed, the other leads within the TTL and provisions the rest; none twice', async () => {
    const a = provisioner('prov-a');
    const b = provisioner('prov-b');
    const winner = await Promise.race([a, b].map((p) => p.next((l) => l.msg === 'won the election').then(() => p)));
    const standby = winner === a ? b : a;
    await waitFor(() => rewrites(site.servers).every((n) => n === 1), 'the first servers configured by the leader', 60_000);
    await waitFor(async () => (await site.ping(8)).length === 8, 'choria ping to find the first 8', 60_000);

    const killedAt = Date.now();
    winner.child.kill('SIGKILL');
    await standby.next((l) => l.msg === 'won the election');
    expect(Date.now() - killedAt).toBeLessThan((TTL_S + 5) * 1000);

    late = startChoriaServers({
      dir: join(site.dir.path, 'late'),
      count: 6,
      provisioningJwt: join(site.dir.path, 'provisioning.jwt'),
      domain: 'late.x509.example.net',
    });
    await waitFor(() => rewrites(late!).every((n) => n === 1), 'the later servers configured by the new leader', 60_000);
    await waitFor(async () => (await site.ping(14)).length === 14, 'choria ping to find all 14', 60_000);
    expect([...rewrites(site.servers), ...rewrites(late)]).toEqual(Array(14).fill(1));
    const configuredBy = (p: RxfleetProcess): string[] => p.lines.filter((l) => l.result === 'provisioned').map((l) => String(l.identity));
    expect(configuredBy(standby).sort()).toEqual([...late.identities].sort());
  }, 180_000);
});
