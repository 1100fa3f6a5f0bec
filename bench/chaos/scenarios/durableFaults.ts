import { DurableRig, durableUnavailable, startDurableRig } from '../parts/durableRig';
import { Enricher } from '../../../spec/helpers/durableWorld';
import { waitFor } from '../../../spec/helpers/waitFor';
import { now, sleep } from '../parts/processes';
import { Scenario, ScenarioEnv } from './scenario';

// The enricher's durable outputs under faults (DECISIONS E14-E16, spec/bin/enrich/durable.lxd.spec.ts
// at sizes an operator sets): `rxfleet enrich` publishing to a stream and a state bucket over a
// private LXD with INSTANCES (default 4) instances, rounds every hour (the only round after a fault
// is the fast one a reconnect starts), and a consumer counting every event by its instance's
// sequence. Each figure is printed beside its goal: no gap the stream does not explain, no
// sequence twice, the bucket and the consumer as LXD says by the end of the first round after the
// fault; for the pair, the standby enriching within the election TTL plus one round's start.

const seconds = (ms: number): number => Math.round(ms / 100) / 10;

/** Runs `fault` on a rig with one enricher (or `pair`), then measures convergence and counts. */
async function withRig(
  env: ScenarioEnv,
  options: { cluster?: boolean; pair?: boolean },
  fault: (
    rig: DurableRig,
    enrichers: Enricher[],
  ) => Promise<{ active: Enricher; figures?: Record<string, unknown>; goals?: Record<string, boolean> }>,
): Promise<Record<string, unknown> & { goals?: Record<string, boolean>; skipped?: string }> {
  const unavailable = durableUnavailable();
  if (unavailable !== undefined) return { skipped: unavailable };
  const rig = await startDurableRig(env.number('INSTANCES', 4), options);
  try {
    const { world } = rig;
    const enrichers =
      options.pair === true ? [await world.startEnricher('a'), await world.startEnricher('b')] : [await world.startEnricher()];
    world.consumer.start();
    const convergeMs = env.number('CONVERGE_MS', 120_000);
    const atStart = await world.converge(convergeMs);
    const { active, figures = {}, goals = {} } = await fault(rig, enrichers);
    const roundsBefore = await rig.rounds(active);
    const faultEnded = now();
    const converged = await world.converge(convergeMs);
    const roundsAfter = (await rig.rounds(active)) - roundsBefore;
    const counts = await rig.counts();
    const alive = world.enrichers.some((e) => e.running());
    return {
      converged_at_start_s: 'seconds' in atStart ? atStart.seconds : null,
      ...figures,
      seconds_to_converge_after_fault: 'seconds' in converged ? converged.seconds : null,
      seconds_to_converge_goal: 'by the end of the first round after the fault',
      rounds_ended_before_converging: roundsAfter,
      rounds_ended_before_converging_goal: '<= 1',
      gaps: counts.gaps,
      gaps_goal: 0,
      duplicates: counts.duplicates,
      duplicates_goal: 0,
      events_counted: counts.events,
      ...(counts.gaps > 0 ? { first_gaps: counts.first_gaps } : {}),
      ...('differences' in converged ? { differences: converged.differences.slice(0, 10), said: world.said(10) } : {}),
      fault_to_converged_s: seconds(now() - faultEnded),
      goals: {
        enricher_up: alive,
        bucket_and_consumer_converged: 'seconds' in converged,
        within_one_round: 'seconds' in converged && roundsAfter <= 1,
        no_gap: counts.gaps === 0,
        no_duplicate: counts.duplicates === 0,
        ...goals,
      },
    };
  } finally {
    await rig.stop();
  }
}

/** kill -9 of `rxfleet enrich`; changes while it is down for DOWN_MS (default 2,000); started again. */
export const enrichKill: Scenario = {
  name: 'enrich-kill',
  description: 'the enricher (JetStream output) killed (-9) and restarted while instances change',
  run: (env) =>
    withRig(env, {}, async (rig, [single]) => {
      await rig.world.change();
      await rig.world.kill(single);
      await rig.world.change();
      await sleep(env.number('DOWN_MS', 2000));
      return { active: await rig.world.startEnricher() };
    }),
};

/** kill -9 of nats-server; changes while it is down for OUTAGE_MS (default 2,000); started again. */
export const enrichNatsKill: Scenario = {
  name: 'enrich-nats-kill',
  description: "nats-server killed (-9) under the enricher's stream and bucket, and restarted",
  run: (env) =>
    withRig(env, {}, async (rig, [single]) => {
      await rig.world.change();
      await rig.nats?.kill();
      await rig.world.change();
      await sleep(env.number('OUTAGE_MS', 2000));
      await rig.nats?.restart();
      return { active: single };
    }),
};

/** The consumer stopped for CONSUMER_DOWN_MS (default 30,000) while instances change, then started from where it was. */
export const enrichConsumerDown: Scenario = {
  name: 'enrich-consumer-down',
  description: 'the consumer of the stream down for 30 s while instances change',
  run: (env) =>
    withRig(env, {}, async (rig, [single]) => {
      const downMs = env.number('CONSUMER_DOWN_MS', 30_000);
      rig.world.consumer.stop();
      const until = now() + downMs;
      await rig.world.change();
      while (now() < until) await sleep(500);
      await rig.world.change();
      rig.world.consumer.start();
      return { active: single, figures: { consumer_down_s: seconds(downMs) } };
    }),
};

/** The LXD daemon restarted (its instances restart with it), then a change. */
export const enrichLxdRestart: Scenario = {
  name: 'enrich-lxd-restart',
  description: 'the LXD daemon restarted under the enricher (JetStream output)',
  run: (env) =>
    withRig(env, {}, async (rig, [single]) => {
      await rig.lxd.restart();
      await rig.world.change();
      return { active: single };
    }),
};

/** kill -9 of the active enricher of a pair (election TTL 3 s); a change; the standby takes over. */
export const enrichStandbyKill: Scenario = {
  name: 'enrich-standby-kill',
  description: 'the active enricher of a pair killed (-9): the standby takes over',
  run: (env) =>
    withRig(env, { pair: true }, async (rig, pair) => {
      const { world } = rig;
      await waitFor(
        async () => (await Promise.all(pair.map((e) => world.role(e)))).includes('active'),
        'one of the pair to enrich',
        60_000,
      );
      const roles = await Promise.all(pair.map((e) => world.role(e)));
      const active = pair[roles.indexOf('active')];
      const standby = pair[1 - roles.indexOf('active')];
      await world.change();
      const killed = now();
      await world.kill(active);
      await world.change();
      await waitFor(async () => (await world.role(standby)) === 'active', 'the standby to take over', 120_000);
      const takeover = seconds(now() - killed);
      // The TTL, a candidate's tries a quarter of it apart, the refresh that confirms it, a round's start.
      const goal = 3 + 3 / 4 + 1 + 2;
      return {
        active: standby,
        figures: { election_ttl_s: 3, takeover_s: takeover, takeover_goal_s: goal },
        goals: { takeover_within_ttl_and_a_round_start: takeover <= goal },
      };
    }),
};

/** A three-server cluster, stream and buckets on all three: kill -9 of the server leading the stream, then a change. */
export const enrichClusterServerKill: Scenario = {
  name: 'enrich-cluster-server-kill',
  description: "a three-server cluster loses the leader of the enricher's stream (-9)",
  run: (env) =>
    withRig(env, { cluster: true }, async (rig, [single]) => {
      const cluster = rig.cluster!;
      const leader = cluster.server((await cluster.streamLeader('INCUS_EVENTS', '$G'))!);
      await rig.world.change();
      await leader.kill();
      await rig.world.change();
      return { active: single, figures: { killed: leader.name } };
    }),
};
