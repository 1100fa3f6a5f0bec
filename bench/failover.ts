/**
 * `npm run bench:failover`: how long a fleet waits when the leading provisioner dies. Three
 * `rxfleet provision` processes with leader_election on a broker laid out as Choria's, a fleet from
 * `rxfleet simulate --trace`; once the leader has provisioned a few nodes it is killed with SIGKILL,
 * and the figure is the time from the kill to the first RPC the new leader sends (the simulated
 * servers timestamp every request they receive). Beside it, the moment the new leader created the
 * key (the win) and the bound upstream gives: TTL plus up to 30 s, because a Go candidate's
 * TwentySec cadence reaches 20 s jittered up to 1.5x (DECISIONS P14 caps ours at a quarter TTL).
 *
 * TTLS (seconds, default 5,30) and RUNS (default 5) change the run. One JSON line per run and one
 * summary line per TTL.
 */
import { ElectionFleet, leaderOf, tracedRequests } from '../spec/helpers/electionFleet';
import { waitFor } from '../spec/helpers/waitFor';
import { benchOutput } from './machineLoad';

const TTLS = (process.env.TTLS ?? '5,30').split(',').map((s) => Number(s) * 1000);
const RUNS = Number(process.env.RUNS ?? 5);
const UPSTREAM_MAX_CANDIDATE_WAIT_MS = 30_000;

// The load average at the start and the end; every figure marked when the machine was busy.
const print = benchOutput('bench:failover').print;
const seconds = (ms: number): number => Math.round(ms) / 1000;

/** One failover: the kill-to-first-RPC and kill-to-win times, ms. */
async function failover(ttlMs: number): Promise<{ firstRpcMs: number; wonMs: number }> {
  const ha = await ElectionFleet.start(ttlMs);
  try {
    const provisioners = await Promise.all(['fo-a', 'fo-b', 'fo-c'].map((name) => ha.provisioner(name, { debug: true })));
    const leader = await leaderOf(provisioners, 60_000);
    await leader.logged('Became leader after winning election');
    // Enough slow nodes that plenty are still waiting in provisioning mode when the new leader wins.
    const fleet = ha.simulate(['--nodes', '300', '--latency', '100ms', '--restart-delay', '100ms', '--lock-window', '1s']);
    const rpcs = () => tracedRequests(fleet).filter((r) => r.agent !== 'discovery');
    await waitFor(
      () => rpcs().filter((r) => r.caller === leader.callerId && r.action === 'restart').length >= 5,
      'the leader to provision 5 nodes',
      60_000,
    );
    const killedAt = Date.now();
    leader.process.child.kill('SIGKILL');
    await leader.process.exited;
    const successor = await leaderOf(
      provisioners.filter((p) => p !== leader),
      ttlMs + UPSTREAM_MAX_CANDIDATE_WAIT_MS + 10_000,
    );
    const createdAt = await successor.logged('election key created; confirming leadership');
    await waitFor(() => rpcs().some((r) => r.caller === successor.callerId), "the new leader's first RPC", 30_000);
    const firstRpcAt = Math.min(
      ...rpcs()
        .filter((r) => r.caller === successor.callerId)
        .map((r) => r.at),
    );
    return { firstRpcMs: firstRpcAt - killedAt, wonMs: createdAt - killedAt };
  } finally {
    await ha.stop();
  }
}

async function main(): Promise<void> {
  for (const ttlMs of TTLS) {
    const runs: { firstRpcMs: number; wonMs: number }[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const result = await failover(ttlMs);
      runs.push(result);
      print({
        figure: 'failover run',
        ttl_s: ttlMs / 1000,
        run,
        kill_to_win_s: seconds(result.wonMs),
        kill_to_first_rpc_s: seconds(result.firstRpcMs),
      });
    }
    const sorted = runs.map((r) => r.firstRpcMs).sort((a, b) => a - b);
    print({
      figure: 'kill -9 of the leader to the first RPC by the new leader',
      ttl_s: ttlMs / 1000,
      runs: RUNS,
      min_s: seconds(sorted[0]),
      median_s: seconds(sorted[Math.floor((sorted.length - 1) / 2)]),
      max_s: seconds(sorted[sorted.length - 1]),
      rxfleet_win_bound_s: seconds(ttlMs + ttlMs / 4),
      upstream_bound_s: seconds(ttlMs + UPSTREAM_MAX_CANDIDATE_WAIT_MS),
    });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
