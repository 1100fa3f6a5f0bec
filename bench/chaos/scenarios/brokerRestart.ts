import { now, sleep } from '../parts/processes';
import { rateBetween, secondsToRate, startProvisionRig } from '../parts/provisionRig';
import { Scenario } from './scenario';

/**
 * kill -9 of nats-server in the middle of provisioning NODES (default 1,000) nodes, and its
 * restart OUTAGE_MS (default 1,000) later on the same port. Goals: every node provisioned,
 * duplicates no more than the cycles in flight at the fault, full rate within 2 s of the broker's
 * return, and the daemon's count agreeing with the fleet's.
 */
export const brokerRestart: Scenario = {
  name: 'broker-restart',
  description: 'nats-server killed (-9) and restarted mid-run',
  async run(env) {
    const nodes = env.number('NODES', 1000);
    const outageMs = env.number('OUTAGE_MS', 1000);
    const rig = await startProvisionRig({ nodes });
    try {
      const started = now();
      await rig.startDaemon();
      await rig.waitConfigured(Math.floor(nodes * 0.4), 300_000);
      const inFlight = await rig.metric('choria_provisioner_busy_workers');
      const before = now();
      const rate = rateBetween(rig.progress, before - 3000, before);
      const configuredAtFault = rig.latest().configured;
      await rig.server.kill();
      const killed = now();
      await sleep(outageMs);
      await rig.server.restart();
      const back = now();
      const finished = await rig.waitAllProvisioned(env.number('RUN_TIMEOUT_MS', 240_000));
      const seconds = (now() - started) / 1000;
      const firstAfter = rig.progress.find((p) => p.at > back && p.configured > configuredAtFault);
      const toFullRate = secondsToRate(rig.progress, back, rate, nodes);
      const daemonProvisioned = await rig.metric('choria_provisioner_provisioned');
      const failedCycles = await rig.metric('choria_provisioner_provision_errors');
      const unexpected = await rig.metric('choria_provisioner_unexpected_replies_total', { reason: 'unsolicited' });
      const peak = rig.peakRss();
      const summary = await rig.finish();
      const duplicates = Number(summary.duplicates);
      return {
        nodes,
        provisioned: summary.provisioned,
        duplicates,
        failed_cycles: failedCycles,
        daemon_provisioned: daemonProvisioned,
        cycles_in_flight_at_fault: inFlight,
        outage_s: Math.round((back - killed) / 100) / 10,
        rate_before_fault_per_s: Math.round(rate * 10) / 10,
        seconds_to_first_configure_after_return: firstAfter === undefined ? null : Math.round((firstAfter.at - back) / 100) / 10,
        seconds_to_full_rate_after_return: toFullRate ?? null,
        late_replies_counted: unexpected,
        seconds,
        peak_rss_mib: peak,
        goals: {
          every_node_provisioned: finished && summary.provisioned === nodes,
          duplicates_within_cycles_in_flight: duplicates <= inFlight,
          full_rate_within_2s: toFullRate !== undefined && toFullRate <= 2,
          daemon_count_agrees: daemonProvisioned === summary.provisioned,
        },
      };
    } finally {
      await rig.finish().catch(() => undefined);
    }
  },
};
