import { ElectionFleet } from '../helpers/electionFleet';
import type { ProvisionerProcess } from '../helpers/electionFleet';
import { waitFor } from '../helpers/waitFor';
import { NATS_SERVERS } from '../helpers/natsServers';

// rxfleet reads each bucket's replica count and cluster from its stream info at start, and warns
// once when a bucket on a cluster has a single replica (DECISIONS P20). Real three-server clusters.

jest.setTimeout(120_000);

const warnings = (p: ProvisionerProcess): string[] =>
  p.process.lines.map((l) => String(l.msg)).filter((m) => m.includes('single point of failure'));

describe.each(NATS_SERVERS)('bucket replicas on a cluster ($name)', ({ binary }) => {
  let fleet: ElectionFleet | undefined;
  afterEach(async () => {
    await fleet?.stop();
    fleet = undefined;
  });

  it('buckets with one replica: each is warned about once, naming the server that holds it', async () => {
    fleet = await ElectionFleet.startCluster(5000, { binary, claimsTtlMs: 20_000, replicas: 1 });
    const servers = fleet.cluster!.urls;
    const elected = await fleet.provisioner('ha-1', { servers });
    const active = await fleet.provisioner('aa-1', { mode: 'active-active', servers });
    const election = await elected.process.next((l) => String(l.msg).includes('single point of failure'));
    const claims = await active.process.next((l) => String(l.msg).includes('single point of failure'));
    expect(election.msg).toMatch(
      /^the CHORIA_LEADER_ELECTION bucket has 1 replica on the cluster rxfleet: server rxfleet-\d is a single point/,
    );
    expect(claims.msg).toMatch(
      /^the RXFLEET_PROVISIONER_CLAIMS bucket has 1 replica on the cluster rxfleet: server rxfleet-\d is a single point/,
    );
    // Once, though the election reads the stream info again at every candidate round.
    await new Promise((r) => setTimeout(r, 3000));
    expect(warnings(elected)).toHaveLength(1);
    expect(warnings(active)).toHaveLength(1);
  });

  it('buckets replicated on the three servers: no warning', async () => {
    fleet = await ElectionFleet.startCluster(5000, { binary, claimsTtlMs: 20_000 });
    const servers = fleet.cluster!.urls;
    const active = await fleet.provisioner('aa-1', { mode: 'active-active', servers });
    const elected = await fleet.provisioner('ha-1', { servers });
    await active.process.next((l) => String(l.msg).startsWith('claims bucket RXFLEET_PROVISIONER_CLAIMS set up'));
    // Leading means it has read the bucket's stream info and written the key.
    await waitFor(() => elected.leads(), 'the instance to lead', 30_000);
    await new Promise((r) => setTimeout(r, 3000));
    expect(warnings(active)).toEqual([]);
    expect(warnings(elected)).toEqual([]);
  });
});
