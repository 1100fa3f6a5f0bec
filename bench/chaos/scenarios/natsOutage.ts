import { now, sleep } from '../parts/processes';
import { lxdUnavailable, startEnrichRig } from '../parts/enrichRig';
import { Scenario } from './scenario';

/**
 * `rxfleet enrich` holding at most HOLD (default 3) events while NATS is unreachable; nats-server
 * is killed, instances are launched, stopped and deleted (more events than the hold), and it comes
 * back after OUTAGE_MS (default 10,000). Goals: the enricher stays up, and what consumers received
 * converges to LXD's state (CONVERGE_MS, default 60,000) although events were dropped.
 */
export const natsOutage: Scenario = {
  name: 'nats-outage',
  description: "NATS outage longer than the enricher's hold",
  async run(env) {
    const unavailable = lxdUnavailable();
    if (unavailable !== undefined) return { skipped: unavailable };
    const rig = await startEnrichRig(env.number('INSTANCES', 3));
    try {
      const hold = env.number('HOLD', 3);
      await rig.startDaemon([`outputs:\n  nats:\n    max_held: ${hold}`]);
      await rig.converge(60_000);
      await rig.nats.kill();
      const killed = now();
      const [first, second] = (await rig.lxd.query<string[]>('/1.0/instances')).map((url) => url.slice(url.lastIndexOf('/') + 1));
      await rig.lxd.stopInstance(first);
      await rig.lxd.deleteInstance(second);
      await rig.launch();
      await rig.launch();
      const left = env.number('OUTAGE_MS', 10_000) - (now() - killed);
      if (left > 0) await sleep(left);
      await rig.nats.restart();
      const back = now();
      const converged = await rig.converge(env.number('CONVERGE_MS', 60_000));
      const dropped = await rig.metric('enricher_published_total', { output: 'nats', result: 'dropped' });
      const differences = converged === undefined ? await rig.differences() : [];
      return {
        hold,
        outage_s: Math.round((back - killed) / 100) / 10,
        events_dropped: dropped,
        seconds_to_converge_after_return: converged ?? null,
        differences,
        peak_rss_mib: rig.peakRss(),
        goals: {
          enricher_stayed_up: rig.daemon().running(),
          events_beyond_the_hold_dropped: dropped > 0,
          published_state_converged: converged !== undefined,
        },
      };
    } finally {
      await rig.stop();
    }
  },
};
