import { cutOff } from '../../../spec/helpers/natsPartition';
import type { RequestRecord } from '../../../streams/simulate/simulatedFleet';
import { ElectionFleet, ProvisionerProcess, tracedRequests } from '../../../spec/helpers/electionFleet';
import { sampleValue } from '../../../spec/helpers/provisioner';
import type { RxfleetProcess } from '../../../spec/helpers/rxfleetProcess';
import { waitFor } from '../../../spec/helpers/waitFor';
import { Scenario } from './scenario';

// Faults of a three-server cluster (DECISIONS P20) under three active-active instances, each on its
// own server, both buckets replicated on all three: what spec/cluster shows, at a size an operator
// sets (NODES), with the figures beside their goals.

const summaryOf = (fleet: RxfleetProcess): Record<string, unknown> => fleet.lines.find((l) => l.type === 'summary') ?? {};
const metricSum = async (ps: ProvisionerProcess[], name: string): Promise<number> => {
  let total = 0;
  for (const p of ps) total += sampleValue(await p.metrics().catch(() => ''), name, { site: p.name }) || 0;
  return total;
};
const inFlightAt = (requests: RequestRecord[], at: number, callers: string[]): number => {
  const mine = requests.filter((r) => r.at < at && callers.includes(r.caller) && r.agent !== 'discovery');
  const restarted = new Set(mine.filter((r) => r.action === 'restart').map((r) => r.identity));
  return new Set(mine.map((r) => r.identity).filter((id) => !restarted.has(id))).size;
};

async function instances(fleet: ElectionFleet): Promise<ProvisionerProcess[]> {
  const cluster = fleet.cluster!;
  const ps = await Promise.all(
    cluster.servers.map((s) =>
      fleet.provisioner(`aa-${s.name}`, { mode: 'active-active', servers: [s.url], workers: 16, logLevel: 'warn' }),
    ),
  );
  await Promise.all(ps.map((p) => waitFor(() => p.ready(), `${p.name} to be ready`, 60_000)));
  return ps;
}

/**
 * kill -9 of the server leading the claims stream while NODES (default 150, as the spec) nodes are
 * provisioned, at 30 % of the fleet. Goals: every node provisioned, done within 20 s of the kill,
 * duplicates and failed cycles each at most the cycles in flight on that server's instance. The
 * default is the spec's size because on a 2-core machine three instances, three servers and the
 * fleet are CPU-bound: at 300 nodes the 70 % left takes about 20 s by itself (10 to 16 nodes a
 * second, the same after the kill as before it), so a 20 s goal would measure the machine, not the
 * kill. `seconds_lost_to_the_kill` is the kill's own cost: the time to done less what the rest
 * takes at the rate before the kill.
 */
export const clusterServerKill: Scenario = {
  name: 'cluster-server-kill',
  description: 'a three-server cluster loses the claims leader (-9) mid-run',
  async run(env) {
    const nodes = env.number('NODES', 150);
    const fleet = await ElectionFleet.startCluster(5000, { claimsTtlMs: 60_000 });
    try {
      const cluster = fleet.cluster!;
      const victim = cluster.server((await cluster.streamLeader('KV_RXFLEET_PROVISIONER_CLAIMS', 'choria'))!);
      const ps = await instances(fleet);
      const onVictim = ps[cluster.servers.indexOf(victim)];
      const survivor = cluster.servers.find((s) => s !== victim)!;
      const sim = fleet.simulate(
        ['--nodes', String(nodes), '--latency', '200ms', '--restart-delay', '100ms', '--lock-window', '2s', '--exit-when-provisioned'],
        survivor.url,
      );
      const restarts = (): number => tracedRequests(sim).filter((r) => r.action === 'restart').length;
      await waitFor(() => restarts() >= nodes * 0.3, '30 % of the fleet', 300_000);
      const killedAt = Date.now();
      const doneAtKill = restarts();
      const rateBefore = tracedRequests(sim).filter((r) => r.action === 'restart' && r.at > killedAt - 3000).length / 3;
      await victim.kill();
      const exit = await Promise.race([sim.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 120_000))]);
      const doneS = (Date.now() - killedAt) / 1000;
      const summary = summaryOf(sim);
      const inFlight = inFlightAt(tracedRequests(sim), killedAt, [onVictim.callerId]);
      const failedCycles = await metricSum(ps, 'choria_provisioner_provision_errors');
      const duplicates = Number(summary.duplicates ?? 0);
      return {
        nodes,
        provisioned: summary.provisioned,
        killed: victim.name,
        seconds_from_kill_to_done: Math.round(doneS * 10) / 10,
        rate_before_kill_per_s: Math.round(rateBefore * 10) / 10,
        seconds_the_rest_takes_at_that_rate: rateBefore > 0 ? Math.round(((nodes - doneAtKill) / rateBefore) * 10) / 10 : null,
        seconds_lost_to_the_kill: rateBefore > 0 ? Math.round((doneS - (nodes - doneAtKill) / rateBefore) * 10) / 10 : null,
        duplicates,
        failed_cycles: failedCycles,
        cycles_in_flight_on_killed_server: inFlight,
        goals: {
          every_node_provisioned: exit !== undefined && summary.provisioned === nodes,
          done_within_20s_of_kill: exit !== undefined && doneS <= 20,
          duplicates_within_cycles_in_flight: duplicates <= inFlight,
          failed_cycles_within_cycles_in_flight: failedCycles <= inFlight,
        },
      };
    } finally {
      await fleet.stop();
    }
  },
};

/**
 * The server leading the claims stream, with one instance and a fleet of NODES (default 60) nodes
 * on it, cut off from the other two for CUT_MS (default 30,000: longer than a configure waits for
 * its reply; claims live twice the cut, at least 30 s) with iptables. Goals: the instance on it
 * wins no claim and fails no cycle while cut off, no node is configured by two instances, every
 * node provisioned within 90 s of the heal, duplicates at most the majority's cycles in flight
 * towards the cut-off fleet.
 */
export const clusterPartition: Scenario = {
  name: 'cluster-partition',
  description: 'a three-server cluster has the claims leader cut off (iptables) mid-run',
  async run(env) {
    const nodes = env.number('NODES', 60);
    const cutMs = env.number('CUT_MS', 30_000);
    // Claims outlive the cut by more than a refresh period (a third of their life): held ones do
    // not lapse, their cycles wait for the bucket.
    const fleet = await ElectionFleet.startCluster(5000, { claimsTtlMs: Math.max(30_000, 2 * cutMs), partitionable: true });
    try {
      const cluster = fleet.cluster!;
      const cut = cluster.server((await cluster.streamLeader('KV_RXFLEET_PROVISIONER_CLAIMS', 'choria'))!);
      const ps = await instances(fleet);
      const minority = ps[cluster.servers.indexOf(cut)];
      const majority = ps.filter((p) => p !== minority);
      const sim = fleet.simulate(
        ['--nodes', String(nodes), '--latency', '300ms', '--restart-delay', '100ms', '--lock-window', '1s', '--exit-when-provisioned'],
        cut.url,
      );
      await waitFor(
        () => tracedRequests(sim).some((r) => r.caller === minority.callerId && r.action === 'restart'),
        'the minority to provision',
        60_000,
      );
      const won = async (): Promise<number> =>
        sampleValue(await minority.metrics(), 'choria_provisioner_claims_total', { site: minority.name, result: 'won' });
      const cutAt = Date.now();
      const partition = cutOff(cluster, cut);
      let wonDuringCut: number;
      let healedAt: number;
      try {
        await new Promise((r) => setTimeout(r, 3000));
        const before = await won();
        await new Promise((r) => setTimeout(r, Math.max(0, cutMs - 3000)));
        wonDuringCut = (await won()) - before;
      } finally {
        partition.heal();
        healedAt = Date.now();
      }
      const exit = await Promise.race([sim.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 150_000))]);
      const summary = summaryOf(sim);
      const stranded = inFlightAt(
        tracedRequests(sim),
        cutAt,
        majority.map((p) => p.callerId),
      );
      const minorityFailed = await metricSum([minority], 'choria_provisioner_provision_errors');
      const duplicates = Number(summary.duplicates ?? 0);
      const configuredByTwo = Number(summary.configuredByTwo ?? 0);
      const afterHeal = (Date.now() - healedAt) / 1000;
      return {
        nodes,
        provisioned: summary.provisioned,
        cut_s: cutMs / 1000,
        claims_won_by_cut_off_instance_during_cut: wonDuringCut,
        failed_cycles_of_cut_off_instance: minorityFailed,
        seconds_from_heal_to_done: Math.round(afterHeal * 10) / 10,
        duplicates,
        nodes_configured_by_two_instances: configuredByTwo,
        majority_cycles_in_flight_towards_cut_fleet: stranded,
        goals: {
          cut_off_instance_claims_nothing: wonDuringCut === 0,
          cut_off_instance_fails_no_cycle: minorityFailed === 0,
          no_node_configured_by_two_instances: configuredByTwo === 0,
          every_node_provisioned_within_90s_of_heal: exit !== undefined && summary.provisioned === nodes && afterHeal <= 90,
          duplicates_within_cycles_in_flight: duplicates <= stranded,
        },
      };
    } finally {
      await fleet.stop();
    }
  },
};
