import { Subscription } from 'rxjs';
import { AdmissionLedger, PauseGate } from '@rxfleet/operators';
import { ElectionMetrics } from '../../lib/choria/electionMetrics';
import { NodeBackoff } from '../../lib/provision/backoff/nodeBackoff';
import { CycleTraces } from '../../lib/provision/cycle/cycleTrace';
import { ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { Sighting } from '../../lib/provision/sightings/sighting';
import { registerProcessMetrics } from '../../streams/processMetrics';
import { DaemonSetting, ELECTION_KEY } from './daemonTypes';

/** The provisioner's shared state and the series that follow it. */
export interface ProvisionerGauges {
  metrics: ProvisionerMetrics;
  /** With `leader_election` only: go-choria registers its election's series when an election starts. */
  electionMetrics: ElectionMetrics | undefined;
  /** Closed at start with leader_election (until won) and in active-active (until the claims bucket is read). */
  gate: PauseGate;
  ledger: AdmissionLedger<Sighting, string>;
  /** P22: a failing node waits longer and longer before it is admitted again; undefined when `failure_backoff` is 0. */
  backoff: NodeBackoff | undefined;
  /** P21: each cycle's steps, for its record. */
  traces: CycleTraces;
  /** Stops the gauges following the gate and the ledger. */
  close(): void;
}

/**
 * Every series at zero before anything runs (P2), the election's too when `leader_election` is on
 * (without it go-choria never starts an election, so its series do not exist), so a dashboard's
 * query finds them; the pause gate and the admission ledger, with `paused` following the gate and (P4)
 * `waiting_nodes` the identities held and `work_queue_entries` those admitted and not started; the
 * failing nodes' backoff, with `backoff_nodes` following it, and the cycles' traces.
 */
export function provisionerGauges(setting: DaemonSetting, processMetrics: boolean): ProvisionerGauges {
  const { config, registry, identity, intervalMs, scheduler } = setting;
  const metrics = new ProvisionerMetrics({ registry, site: config.site });
  const electionMetrics = config.leaderElection ? new ElectionMetrics({ registry, election: ELECTION_KEY, identity }) : undefined;
  if (processMetrics) registerProcessMetrics(registry);
  const gate = new PauseGate(config.leaderElection || config.rxfleet.mode === 'active-active');
  const ledger = new AdmissionLedger<Sighting, string>({
    key: (s) => s.identity,
    window: intervalMs,
    capacity: config.rxfleet.queueCapacity,
    scheduler,
  });
  const watches = new Subscription();
  watches.add(gate.paused$.subscribe((paused) => metrics.setPaused(paused)));
  watches.add(
    ledger.sizes$.subscribe(({ held, queued }) => {
      metrics.setWaitingNodes(held);
      metrics.setWorkQueueEntries(queued);
    }),
  );
  const { failureBackoffMs } = config.rxfleet;
  const backoff =
    failureBackoffMs > 0
      ? new NodeBackoff({ baseMs: intervalMs, ceilingMs: failureBackoffMs, onSize: (n) => metrics.setBackoffNodes(n) })
      : undefined;
  const traces = new CycleTraces(() => scheduler.now());
  return { metrics, electionMetrics, gate, ledger, backoff, traces, close: () => watches.unsubscribe() };
}
