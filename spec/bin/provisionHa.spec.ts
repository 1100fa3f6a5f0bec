import { SCRIPTED_HELPER, sampleValue } from '../helpers/provisioner';
import type { RequestRecord } from '../../streams/simulate/simulatedFleet';
import { ElectionFleet, cyclesInFlightAt, leaderOf, tracedRequests, waitMidRun } from '../helpers/electionFleet';
import { waitFor } from '../helpers/waitFor';

// Several `rxfleet provision` processes with leader_election over a broker laid out as Choria's
// (the provisioning account may only read the bucket's info and publish to the key), and a fleet
// from `rxfleet simulate --trace` that says who sent each request and when.
const TTL_MS = 5000;
/** DECISIONS P14: a candidate tries at least every quarter TTL. */
const CANDIDATE_CAP_MS = TTL_MS / 4;
/** JetStream's expiry timer, the create's round trip and a loaded 2-core machine: what a wall-clock bound must allow. */
const SLACK_MS = 2000;
const WON = 'Became leader after winning election';

jest.setTimeout(90_000);

const summaryOf = (lines: Record<string, unknown>[]): Record<string, unknown> | undefined => lines.find((l) => l.type === 'summary');
const work = (requests: RequestRecord[]): RequestRecord[] => requests.filter((r) => r.agent !== 'discovery');
const callers = (requests: RequestRecord[]): string[] => [...new Set(requests.map((r) => r.caller))];

describe('rxfleet provision with leader_election, as processes', () => {
  let ha: ElectionFleet | undefined;
  afterEach(async () => {
    await ha?.stop();
    ha = undefined;
  });

  it('of three daemons exactly one provisions; the others discover nothing and send no RPC', async () => {
    ha = await ElectionFleet.start(TTL_MS);
    const provisioners = await Promise.all(['ha-a', 'ha-b', 'ha-c'].map((name) => ha!.provisioner(name)));
    const leader = await leaderOf(provisioners, 30_000);
    await leader.logged(WON);

    const fleet = ha.simulate(['--nodes', '20', '--restart-delay', '100ms', '--exit-when-provisioned']);
    expect((await fleet.exited).code).toBe(0);
    expect(summaryOf(fleet.lines)).toMatchObject({ nodes: 20, provisioned: 20, duplicates: 0 });
    const requests = tracedRequests(fleet);
    expect(callers(requests)).toEqual([leader.callerId]);
    expect(requests.filter((r) => r.action === 'configure')).toHaveLength(20);

    expect(sampleValue(await leader.metrics(), 'choria_provisioner_provisioned', { site: leader.name })).toBe(20);
    for (const standby of provisioners.filter((p) => p !== leader)) {
      // A standby's first campaign comes after a random start splay of up to 5 s, which the run
      // above may outlast or not: what is promised is that it campaigns, so wait for it to.
      const campaigns = async (): Promise<number> =>
        sampleValue(await standby.metrics(), 'choria_election_campaigns', { identity: standby.identity, state: 'candidate' });
      await waitFor(async () => (await campaigns()) > 0, `${standby.name} to campaign as a candidate`, 5000 + CANDIDATE_CAP_MS + SLACK_MS);
      const metrics = await standby.metrics();
      expect(sampleValue(metrics, 'choria_election_leader', { identity: standby.identity })).toBe(0);
      expect(sampleValue(metrics, 'choria_provisioner_paused')).toBe(1);
      expect(sampleValue(metrics, 'choria_provisioner_discovered', { site: standby.name })).toBe(0);
      expect(sampleValue(metrics, 'choria_provisioner_event_discovered', { site: standby.name })).toBe(0);
    }
  });

  it('kill -9 of the leader mid-run: another wins within TTL plus a candidate interval, every node ends provisioned, duplicates no more than were in flight', async () => {
    ha = await ElectionFleet.start(TTL_MS);
    // Each helper takes a second, so a cycle the fleet's trace shows short of its configure is still
    // in flight for at least that long when the leader is killed: the trace is read a moment behind
    // the fleet, and CI has seen that cycle reach its restart before the kill.
    const provisioners = await Promise.all(
      ['ha-a', 'ha-b', 'ha-c'].map((name) => ha!.provisioner(name, { debug: true, helper: `${SCRIPTED_HELPER} delay 1000` })),
    );
    const leader = await leaderOf(provisioners, 30_000);
    await leader.logged(WON);

    // Slow replies keep several nodes in flight at any moment. The lock window is shorter than the
    // failover, so nodes the dead leader had locked are free when the new one reaches them (with
    // go-choria's two minutes they would wait out the lock: P10, specified elsewhere).
    const fleet = ha.simulate([
      '--nodes',
      '60',
      '--latency',
      '150ms',
      '--restart-delay',
      '100ms',
      '--lock-window',
      '2s',
      '--exit-when-provisioned',
    ]);
    await waitMidRun(fleet, leader.callerId, 10);
    const killedAt = Date.now();
    leader.process.child.kill('SIGKILL');
    await leader.process.exited;

    const successor = await leaderOf(
      provisioners.filter((p) => p !== leader),
      3 * TTL_MS,
    );
    // The create is the win; `won` is announced one refresh later, as upstream.
    const createdAt = await successor.logged('election key created; confirming leadership');
    expect(createdAt - killedAt).toBeLessThanOrEqual(TTL_MS + CANDIDATE_CAP_MS + SLACK_MS);

    expect((await fleet.exited).code).toBe(0);
    const summary = summaryOf(fleet.lines);
    expect(summary).toMatchObject({ nodes: 60, provisioned: 60 });
    const requests = work(tracedRequests(fleet));
    expect(requests.some((r) => r.caller === successor.callerId)).toBe(true);
    // In flight at the kill: nodes the old leader had begun and not yet told to restart.
    const inFlight = cyclesInFlightAt(requests, killedAt, leader.callerId);
    expect(inFlight).toBeGreaterThan(0);
    expect(summary?.duplicates).toBeLessThanOrEqual(inFlight);
  });

  it('a leader that loses its key mid-provisioning sends no configure after the loss, and provisions everything once it wins again', async () => {
    ha = await ElectionFleet.start(TTL_MS);
    const provisioner = await ha.provisioner('ha-lose', { helper: `${SCRIPTED_HELPER} delay 3000`, workers: 8 });
    await leaderOf([provisioner], 30_000);
    await provisioner.logged(WON);
    const fleet = ha.simulate(['--nodes', '6', '--restart-delay', '100ms', '--exit-when-provisioned']);
    const begun = (): Set<string> => new Set(work(tracedRequests(fleet)).map((r) => r.identity));
    await waitFor(() => begun().size === 6, 'every node to be in its cycle (the helper takes 3 s)');

    // Another identity takes the key, as a Go provisioner would once ours had lapsed, and keeps it.
    const bucket = await ha.bucket();
    await bucket.put('provisioner', 'go-provisioner.example.net');
    const keepGoValue = setInterval(() => void bucket.put('provisioner', 'go-provisioner.example.net').catch(() => undefined), 1000);
    let lostAt: number;
    try {
      lostAt = await provisioner.logged('Lost leadership');
      // Every helper in flight at the loss has finished (3 s) and its node was not configured.
      await waitFor(
        async () => sampleValue(await provisioner.metrics(), 'choria_provisioner_busy_workers') === 0,
        'the cycles in flight to stop',
        15_000,
      );
      expect(work(tracedRequests(fleet)).filter((r) => r.action === 'configure')).toEqual([]);
    } finally {
      clearInterval(keepGoValue);
    }

    // The Go value lapses; rxfleet wins again, discovers at once, and provisions all six.
    expect((await fleet.exited).code).toBe(0);
    expect(summaryOf(fleet.lines)).toMatchObject({ provisioned: 6, duplicates: 0 });
    const configures = work(tracedRequests(fleet)).filter((r) => r.action === 'configure');
    expect(configures).toHaveLength(6);
    const wonAgainAt = Number(provisioner.process.lines.filter((l) => l.msg === WON)[1]?.time);
    expect(wonAgainAt).toBeGreaterThan(lostAt);
    expect(configures.filter((r) => r.at < wonAgainAt)).toEqual([]);
  });

  it('a Go provisioner holding the key keeps rxfleet a candidate until the key lapses', async () => {
    ha = await ElectionFleet.start(TTL_MS);
    const bucket = await ha.bucket();
    await bucket.create('provisioner', 'go-provisioner.example.net');
    const keepGoValue = setInterval(() => void bucket.put('provisioner', 'go-provisioner.example.net').catch(() => undefined), 1000);
    let fleet;
    const provisioner = await ha.provisioner('ha-go');
    try {
      fleet = ha.simulate(['--nodes', '3', '--restart-delay', '100ms', '--exit-when-provisioned']);
      await fleet.next((l) => l.type === 'ready');
      // Ten failed creates at the capped TwentySec cadence take over a TTL even at the shortest jitter.
      const candidateTicks = async (): Promise<number> =>
        sampleValue(await provisioner.metrics().catch(() => ''), 'choria_election_campaigns', {
          identity: provisioner.identity,
          state: 'candidate',
        });
      await waitFor(async () => (await candidateTicks()) >= 10, 'ten candidate campaigns', 30_000);
      expect(sampleValue(await provisioner.metrics(), 'choria_election_leader', { identity: provisioner.identity })).toBe(0);
      expect(tracedRequests(fleet).filter((r) => r.caller === provisioner.callerId)).toEqual([]);
      expect((await bucket.get('provisioner'))?.string()).toBe('go-provisioner.example.net');
    } finally {
      clearInterval(keepGoValue);
    }
    expect((await fleet.exited).code).toBe(0);
    expect(summaryOf(fleet.lines)).toMatchObject({ provisioned: 3 });
    expect(callers(tracedRequests(fleet))).toEqual([provisioner.callerId]);
  });
});
