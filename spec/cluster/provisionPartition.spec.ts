import { cutOff } from '../helpers/natsPartition';
import { ElectionFleet, ProvisionerProcess, cyclesInFlightAt, tracedRequests } from '../helpers/electionFleet';
import { sampleValue } from '../helpers/provisioner';
import type { RxfleetProcess } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';
import { NATS_SERVERS } from '../helpers/natsServers';

// Three `rxfleet provision` instances in active-active mode on a three-server cluster (both buckets
// replicated on all three), each connected to a different server, and a fleet on the server that
// leads the claims stream, with the instance on it. That server is cut off from the other two
// (iptables on the route ports, the route connections reset) while the instance on it is mid-run,
// then the cut heals. The node-side lock is made short (1 s) so that it protects nothing: the claims
// must hold on their own.

jest.setTimeout(240_000);

// Longer than the cut by more than a refresh period: held claims do not lapse, their cycles wait
// for the bucket and go on after the heal.
const CLAIMS_TTL_MS = 60_000;
// Longer than a choria_provision attempt waits for its reply (22 s): a majority cycle whose
// configure reached the cut-off node as the cut came (its reply lost with the route) then spends
// its other tries on nothing listening. Before the fix that cycle failed and freed the node, and
// after the heal another instance configured it a second time (2 and 5 nodes in two runs).
const CUT_MS = 30_000;
const summaryOf = (fleet: RxfleetProcess): Record<string, unknown> | undefined => fleet.lines.find((l) => l.type === 'summary');
const metric = async (p: ProvisionerProcess, name: string, labels: Record<string, string> = {}): Promise<number> =>
  sampleValue(await p.metrics(), name, { site: p.name, ...labels });

describe.each(NATS_SERVERS)('active-active on a three-server cluster, one server cut off (iptables) ($name)', ({ binary }) => {
  let aa: ElectionFleet | undefined;
  afterEach(async () => {
    await aa?.stop();
    aa = undefined;
  });

  it('the instance on the cut-off side claims nothing, sends nothing once it cannot confirm its claims, and fails no cycle; no node is configured by two instances; every node is provisioned after the cut heals', async () => {
    aa = await ElectionFleet.startCluster(5000, { binary, claimsTtlMs: CLAIMS_TTL_MS, partitionable: true });
    const cluster = aa.cluster!;
    let leader: string | undefined;
    await waitFor(
      async () => (leader = await cluster.streamLeader('KV_RXFLEET_PROVISIONER_CLAIMS', 'choria')) !== undefined,
      'a claims leader',
    );
    const cut = cluster.server(leader!);
    const [b, c] = cluster.servers.filter((s) => s !== cut);
    const settings = { mode: 'active-active', workers: 20 } as const;
    const minority = await aa.provisioner('aa-minority', { ...settings, servers: [cut.url] });
    const majority = await Promise.all([
      aa.provisioner('aa-b', { ...settings, servers: [b.url] }),
      aa.provisioner('aa-c', { ...settings, servers: [c.url] }),
    ]);
    const all = [minority, ...majority];
    await Promise.all(
      all.map((p) =>
        waitFor(async () => (await metric(p, 'choria_provisioner_discover_cycles').catch(() => 0)) >= 1, `${p.name} to set up`, 30_000),
      ),
    );
    const fleet = aa.simulate(
      ['--nodes', '60', '--latency', '300ms', '--restart-delay', '100ms', '--lock-window', '1s', '--exit-when-provisioned'],
      cut.url,
    );
    const restartedBy = (caller: string): number =>
      tracedRequests(fleet).filter((r) => r.caller === caller && r.action === 'restart').length;
    await waitFor(() => restartedBy(minority.callerId) >= 3, 'the minority instance to provision 3 nodes', 60_000);

    const cutAt = Date.now();
    const partition = cutOff(cluster, cut);
    let healedAt: number;
    let wonAfterCut: number;
    try {
      // Writes already on their way when the cut came may still land: give them the client's 2 s timeout.
      await new Promise((r) => setTimeout(r, 3000));
      wonAfterCut = await metric(minority, 'choria_provisioner_claims_total', { result: 'won' });
      await new Promise((r) => setTimeout(r, CUT_MS - 3000));
      expect(await metric(minority, 'choria_provisioner_claims_total', { result: 'won' })).toBe(wonAfterCut);
    } finally {
      partition.heal();
      healedAt = Date.now();
    }

    const exit = await fleet.exited;
    const doneAt = Date.now();
    expect(exit.code).toBe(0);
    const summary = summaryOf(fleet);
    expect(summary).toMatchObject({ nodes: 60, provisioned: 60 });
    // Everything provisioned within a minute of the heal (the next discovery round), with 30 s for a busy machine.
    expect(doneAt - healedAt).toBeLessThan(90_000);

    const requests = tracedRequests(fleet).filter((r) => r.agent !== 'discovery');
    // Every held claim is refreshed within a third of the TTL of the cut, and that refresh fails
    // within the client's 2 s timeout; from then (plus 1.5 s for a busy machine's lag) until the
    // heal no attempt starts: the minority instance sends nothing.
    const quietFrom = cutAt + CLAIMS_TTL_MS / 3 + 3500;
    expect(requests.filter((r) => r.caller === minority.callerId && r.at > quietFrom && r.at < healedAt)).toEqual([]);
    // No node is configured by two instances, by the fleet's own count; the trace names any that were.
    const configuredBy = new Map<string, string[]>();
    for (const r of requests.filter((q) => q.action === 'configure'))
      configuredBy.set(r.identity, [...(configuredBy.get(r.identity) ?? []), `${r.caller} at ${((r.at - cutAt) / 1000).toFixed(2)} s`]);
    const byTwo = [...configuredBy].filter(([, by]) => new Set(by.map((b) => b.split(' ')[0])).size > 1);
    expect({ configuredByTwo: summary?.configuredByTwo, byTwo }).toEqual({ configuredByTwo: 0, byTwo: [] });
    // A claim that could not be written is no failed node: the instance that could not confirm its
    // claims fails nothing. The majority's failures are its cycles towards the cut-off fleet, their
    // RPCs lost with the route: those in flight as the cut came and any begun or run again while it
    // lasts, so their count has no bound but the cut's length (CI has seen 20 failures with 9 nodes
    // in flight at the cut); each is counted and logged with its node. The nodes configured twice
    // are among the cycles in flight, each configured again by the same instance: its configure
    // reached the node as the cut came and its reply was lost.
    expect(await metric(minority, 'choria_provisioner_provision_errors')).toBe(0);
    for (const p of majority) {
      const failures = p.process.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('Could not provision '));
      expect(failures.filter((l) => !String(l.msg).startsWith(`Could not provision ${String(l.identity)}: `))).toEqual([]);
      expect(await metric(p, 'choria_provisioner_provision_errors')).toBe(failures.length);
    }
    const stranded = majority.reduce((n, p) => n + cyclesInFlightAt(requests, cutAt, p.callerId), 0);
    expect(summary?.duplicates).toBeLessThanOrEqual(stranded);
  });
});
