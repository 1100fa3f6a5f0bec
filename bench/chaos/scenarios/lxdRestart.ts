import { now, sleep } from '../parts/processes';
import { lxdUnavailable, startEnrichRig } from '../parts/enrichRig';
import { Scenario } from './scenario';

/**
 * `rxfleet enrich` over a private LXD with INSTANCES (default 4) running instances, rounds every
 * 3 s; LXD is killed (-9) in the middle of a round and started again DOWN_MS (default 3,000)
 * later; then one instance is stopped, one deleted and one launched. Goals: the enricher stays up,
 * and what it published converges to LXD's state (CONVERGE_MS, default 60,000).
 */
export const lxdRestart: Scenario = {
  name: 'lxd-restart',
  description: 'LXD killed (-9) during a round and started again',
  async run(env) {
    const unavailable = lxdUnavailable();
    if (unavailable !== undefined) return { skipped: unavailable };
    const rig = await startEnrichRig(env.number('INSTANCES', 4));
    try {
      await rig.startDaemon();
      const convergedAtStart = await rig.converge(env.number('CONVERGE_MS', 60_000));
      // The middle of a round: a round has just ended, the next starts 3 s later and reads one
      // instance every 200 ms.
      const sweeps = await rig.metric('enricher_sweeps_total', { result: 'ok' });
      const deadline = now() + 30_000;
      while ((await rig.metric('enricher_sweeps_total', { result: 'ok' })) <= sweeps && now() < deadline) await sleep(100);
      await sleep(3300);
      await rig.lxd.kill();
      const killed = now();
      await sleep(env.number('DOWN_MS', 3000));
      await rig.lxd.restart();
      const back = now();
      const [first, second] = (await rig.lxd.query<string[]>('/1.0/instances')).map((url) => url.slice(url.lastIndexOf('/') + 1));
      await rig.lxd.stopInstance(first);
      await rig.lxd.deleteInstance(second);
      await rig.launch();
      const converged = await rig.converge(env.number('CONVERGE_MS', 60_000));
      const sinceReturn = Math.round((now() - back) / 100) / 10;
      const failedRounds = await rig.metric('enricher_sweeps_total', { result: 'failed' });
      const differences = converged === undefined ? await rig.differences() : [];
      const alive = rig.daemon().running();
      const peak = rig.peakRss();
      return {
        converged_at_start_s: convergedAtStart ?? null,
        lxd_down_s: Math.round((back - killed) / 100) / 10,
        seconds_to_converge_after_changes: converged ?? null,
        seconds_from_lxd_return_to_converged: converged === undefined ? null : sinceReturn,
        failed_rounds: failedRounds,
        events_published: rig.received(),
        differences,
        peak_rss_mib: peak,
        goals: { enricher_stayed_up: alive, published_state_converged: converged !== undefined },
      };
    } finally {
      await rig.stop();
    }
  },
};
