import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { now } from '../parts/processes';
import { startProvisionRig } from '../parts/provisionRig';
import { Scenario } from './scenario';

const FLAKY = join(__dirname, '../helpers/flaky-helper.mjs');

/** Processes started by this run's helpers that are still running. */
function leftovers(stateDir: string): string[] {
  return spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => (l.includes(stateDir) || l.includes('flaky-helper-leftover')) && !l.includes(' ps '));
}

/**
 * NODES (default 160) nodes whose first helper run fails in each way a helper can (a timeout, a
 * non-zero exit, output that is not JSON, no output, 20 MB of output, death by a signal, a child
 * left behind; see bench/chaos/helpers/flaky-helper.mjs), and succeeds at the next discovery, a
 * minute later. Goals: every node provisioned, each failure counted once, nothing left running.
 */
export const helperFailures: Scenario = {
  name: 'helper-failures',
  description: 'every way a helper can fail, retried and cleaned up',
  async run(env) {
    const nodes = env.number('NODES', 160);
    const stateDir = mkdtempSync(join(tmpdir(), 'rxfleet-chaos-flaky-'));
    const rig = await startProvisionRig({ nodes, helper: `${FLAKY} ${stateDir}`, workers: 16, yaml: ['rxfleet: {helper_timeout: 3s}'] });
    try {
      const started = now();
      await rig.startDaemon();
      const finished = await rig.waitAllProvisioned(env.number('RUN_TIMEOUT_MS', 200_000));
      const seconds = (now() - started) / 1000;
      const helperErrors = await rig.metric('choria_provisioner_helper_errors');
      const failed = await rig.metric('choria_provisioner_provision_errors');
      const peak = rig.peakRss();
      const summary = await rig.finish();
      // Nodes numbered 1..N; n mod 8 in 1..6 fail their first run (7 answers, leaving a child).
      let expectedFailures = 0;
      for (let n = 1; n <= nodes; n++) if (n % 8 >= 1 && n % 8 <= 6) expectedFailures++;
      const left = leftovers(stateDir);
      return {
        nodes,
        provisioned: summary.provisioned,
        duplicates: summary.duplicates,
        helper_errors: helperErrors,
        failed_cycles: failed,
        failures_expected: expectedFailures,
        processes_left_running: left.length,
        seconds,
        peak_rss_mib: peak,
        goals: {
          every_node_provisioned: finished && summary.provisioned === nodes,
          each_failure_counted_once: helperErrors === expectedFailures,
          nothing_left_running: left.length === 0,
        },
      };
    } finally {
      await rig.finish().catch(() => undefined);
      rmSync(stateDir, { recursive: true, force: true });
    }
  },
};
