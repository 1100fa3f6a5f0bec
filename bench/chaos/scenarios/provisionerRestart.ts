import { now, sleep } from '../parts/processes';
import { startProvisionRig } from '../parts/provisionRig';
import { Scenario } from './scenario';

/**
 * kill -9 of `rxfleet provision` in the middle of provisioning NODES (default 1,000) nodes, and a
 * new one started DOWN_MS (default 1,000) later with the same identity, as a supervisor would.
 * Goals: every node provisioned, duplicates no more than the cycles in flight at the kill, and no
 * helper left running by the killed daemon.
 */
export const provisionerRestart: Scenario = {
  name: 'provisioner-restart',
  description: 'rxfleet provision killed (-9) mid-run and started again',
  async run(env) {
    const nodes = env.number('NODES', 1000);
    const rig = await startProvisionRig({ nodes });
    try {
      const started = now();
      const first = await rig.startDaemon();
      await rig.waitConfigured(Math.floor(nodes * 0.4), 300_000);
      const inFlight = await rig.metric('choria_provisioner_busy_workers');
      const firstPeak = rig.peakRss();
      first.child.kill('SIGKILL');
      await first.exited;
      const killed = now();
      const configuredAtKill = rig.latest().configured;
      await sleep(env.number('DOWN_MS', 1000));
      await rig.startDaemon();
      const back = now();
      const finished = await rig.waitAllProvisioned(env.number('RUN_TIMEOUT_MS', 240_000));
      const firstAfter = rig.progress.find((p) => p.at > back && p.configured > configuredAtKill);
      const failedCycles = await rig.metric('choria_provisioner_provision_errors');
      const peak = rig.peakRss();
      const summary = await rig.finish();
      const duplicates = Number(summary.duplicates);
      return {
        nodes,
        provisioned: summary.provisioned,
        duplicates,
        failed_cycles_after_restart: failedCycles,
        cycles_in_flight_at_kill: inFlight,
        seconds_down: Math.round((back - killed) / 100) / 10,
        seconds_to_first_configure_after_restart: firstAfter === undefined ? null : Math.round((firstAfter.at - back) / 100) / 10,
        seconds: (now() - started) / 1000,
        peak_rss_mib: Math.max(firstPeak ?? 0, peak ?? 0),
        goals: {
          every_node_provisioned: finished && summary.provisioned === nodes,
          duplicates_within_cycles_in_flight: duplicates <= inFlight,
        },
      };
    } finally {
      await rig.finish().catch(() => undefined);
    }
  },
};
