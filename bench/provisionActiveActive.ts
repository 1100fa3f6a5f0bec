/**
 * `npm run bench:provision:active-active`: active-active provisioning (DECISIONS P16) against one
 * instance, on a nats-server laid out as a Choria broker (the claims bucket reached from the
 * provisioning account through `choria.streams`), a fleet from `rxfleet simulate --trace` with
 * RPC latency (200 ms per reply by default: what makes more instances worth having), and the
 * persistent sample helper, so neither helpers nor one process's CPU is the bound. Three runs:
 *
 * 1. one instance (`rxfleet provision` as it runs alone: no claims) with WORKERS workers: the baseline;
 * 2. three instances with WORKERS workers each: nodes per second beside the baseline (the goal is
 *    2.5x or more), each node provisioned exactly once by the fleet's own count, claims won, lost
 *    and lapsed per instance;
 * 3. three instances, one killed with SIGKILL once it has provisioned a third of its share: every
 *    node still provisioned, and the fleet's duplicates beside the dead instance's cycles in flight
 *    at the kill (nodes it had begun and not yet told to restart). The survivors take its nodes at
 *    their next discovery round once its claims have lapsed.
 *
 * NODES (default 6000), WORKERS (64), LATENCY (200), CLAIMS_TTL (seconds, 120: at least twice the
 * 1-minute interval, so a sighting waiting in a queue never outlives a claim), RUNS (one,three,kill)
 * and RUN_TIMEOUT_MINUTES (30) change the run. One JSON line per figure; the exact command and the
 * load average at the start and the end.
 */
import { ElectionFleet, ProvisionerProcess, tracedRequests } from '../spec/helpers/electionFleet';
import { sampleValue } from '../spec/helpers/provisioner';
import { sampleHelperPath } from '../bin/sampleHelpers';
import { RxfleetProcess } from '../spec/helpers/rxfleetProcess';
import { waitFor } from '../spec/helpers/waitFor';
import { now, onInterrupt, print, printFooter, printHeader, round, sleep, tracked } from './provisionHarness';

const NODES = Number(process.env.NODES ?? 6000);
const WORKERS = Number(process.env.WORKERS ?? 64);
const LATENCY = Number(process.env.LATENCY ?? 200);
const CLAIMS_TTL_MS = Number(process.env.CLAIMS_TTL ?? 120) * 1000;
const RUNS = (process.env.RUNS ?? 'one,three,kill').split(',');
const RUN_TIMEOUT_MS = Number(process.env.RUN_TIMEOUT_MINUTES ?? 30) * 60_000;
const HELPER = sampleHelperPath('persistent-helper.sh');

interface RunResult {
  nodesPerSecond: number;
  seconds: number;
}

const summaryOf = (fleet: RxfleetProcess): Record<string, unknown> => fleet.lines.find((l) => l.type === 'summary') ?? {};

async function claimsOf(p: ProvisionerProcess): Promise<Record<string, number>> {
  const text = await p.metrics().catch(() => '');
  const of = (result: string): number => sampleValue(text, 'choria_provisioner_claims_total', { site: p.name, result });
  const provisioned = sampleValue(text, 'choria_provisioner_provisioned', { site: p.name });
  // An instance alone (the baseline) has no claims.
  return Number.isNaN(of('won')) ? { provisioned } : { won: of('won'), lost: of('lost'), lapsed: of('lapsed'), provisioned };
}

async function run(kind: string, instances: number, baseline: RunResult | undefined): Promise<RunResult> {
  const fleetOf = await ElectionFleet.start(60_000, { claimsTtlMs: CLAIMS_TTL_MS });
  onInterrupt(() => fleetOf.stop());
  try {
    const names = Array.from({ length: instances }, (_, i) => `aa-${String.fromCharCode(97 + i)}`);
    const provisioners = await Promise.all(
      names.map((name) =>
        fleetOf.provisioner(name, {
          mode: kind === 'one' ? 'single' : 'active-active',
          helperMode: 'persistent',
          helper: HELPER,
          workers: WORKERS,
          logLevel: 'error',
        }),
      ),
    );
    for (const p of provisioners) tracked(p.process);
    // Ready: connected and, active-active, the claims bucket read (its first round runs then).
    await Promise.all(provisioners.map((p) => waitFor(async () => await p.ready(), `${p.name} to be ready`, 60_000)));
    // The fleet boots once the instances are up: each node reaches one of them by its startup event
    // (the queue group spreads them); discovery rounds find whatever an instance left behind.
    const fleet = tracked(
      fleetOf.simulate([
        '--nodes',
        String(NODES),
        '--latency',
        `${LATENCY}ms`,
        '--restart-delay',
        '0',
        '--lock-window',
        '10s',
        '--exit-when-provisioned',
      ]),
    );
    await fleet.next((l) => l.type === 'ready');
    const started = now();
    const startedAt = Date.now();
    let killed: { at: number; victim: ProvisionerProcess } | undefined;
    const restarts = (caller: string): number => tracedRequests(fleet).filter((r) => r.caller === caller && r.action === 'restart').length;
    while (fleet.running() && now() - started < RUN_TIMEOUT_MS) {
      await sleep(500);
      if (kind === 'kill' && killed === undefined && restarts(provisioners[0].callerId) >= NODES / instances / 3) {
        killed = { at: Date.now(), victim: provisioners[0] };
        provisioners[0].process.child.kill('SIGKILL');
      }
    }
    const seconds = (now() - started) / 1000;
    await fleet.exited;
    const summary = summaryOf(fleet);
    const provisioned = Number(summary.provisioned ?? 0);
    const requests = tracedRequests(fleet).filter((r) => r.agent !== 'discovery');
    const perInstance: Record<string, Record<string, number>> = {};
    for (const p of provisioners) if (p.process.running()) perInstance[p.name] = await claimsOf(p);
    const result: RunResult = { nodesPerSecond: provisioned / seconds, seconds };
    let inFlight: number | undefined;
    if (killed !== undefined) {
      const before = requests.filter((r) => r.caller === killed?.victim.callerId && r.at < (killed?.at ?? 0));
      const restarted = new Set(before.filter((r) => r.action === 'restart').map((r) => r.identity));
      inFlight = new Set(before.map((r) => r.identity).filter((id) => !restarted.has(id))).size;
    }
    print({
      figure:
        kind === 'one'
          ? 'one instance'
          : kind === 'three'
            ? 'three active-active instances'
            : 'three active-active instances, one killed with SIGKILL mid-run',
      nodes: NODES,
      instances,
      workers_each: WORKERS,
      rpc_latency_ms: LATENCY,
      claims_ttl_s: CLAIMS_TTL_MS / 1000,
      fleet_provisioned: provisioned,
      fleet_duplicates: summary.duplicates,
      finished: provisioned >= NODES,
      seconds: round(seconds),
      nodes_per_second: round(result.nodesPerSecond),
      ...(baseline !== undefined && kind === 'three'
        ? {
            one_instance_nodes_per_second: round(baseline.nodesPerSecond),
            ratio_to_one_instance: round(result.nodesPerSecond / baseline.nodesPerSecond, 2),
          }
        : {}),
      configures_by_instance: Object.fromEntries(
        provisioners.map((p) => [p.name, requests.filter((r) => r.caller === p.callerId && r.action === 'configure').length]),
      ),
      claims_by_instance: perInstance,
      ...(killed !== undefined
        ? { killed: killed.victim.name, killed_after_s: round((killed.at - startedAt) / 1000), killed_instance_cycles_in_flight: inFlight }
        : {}),
    });
    return result;
  } finally {
    await fleetOf.stop();
  }
}

async function main(): Promise<void> {
  printHeader('bench/provisionActiveActive.ts', ['NODES', 'WORKERS', 'LATENCY', 'CLAIMS_TTL', 'RUNS', 'RUN_TIMEOUT_MINUTES'], {
    nodes: NODES,
    workers_each: WORKERS,
    rpc_latency_ms: LATENCY,
    claims_ttl_s: CLAIMS_TTL_MS / 1000,
    runs: RUNS,
  });
  try {
    let baseline: RunResult | undefined;
    if (RUNS.includes('one')) baseline = await run('one', 1, undefined);
    if (RUNS.includes('three')) await run('three', 3, baseline);
    if (RUNS.includes('kill')) await run('kill', 3, baseline);
  } finally {
    printFooter();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
