import { join } from 'node:path';
import { SAMPLE_HELPERS, SCRIPTED_HELPER, sampleValue } from '../helpers/provisioner';
import type { RequestRecord } from '../../streams/simulate/simulatedFleet';
import { ElectionFleet, ProvisionerProcess, cyclesInFlightAt, tracedRequests, waitMidRun } from '../helpers/electionFleet';
import { RxfleetProcess } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// Three `rxfleet provision` processes with `rxfleet.mode: active-active` over a broker laid out as
// Choria's (the claims bucket in the `choria` account, reached from the provisioning account only
// through the grant under `choria.streams`), and a fleet from `rxfleet simulate --trace` that says
// who sent each request and when. The election bucket is there too, unused.
const ELECTION_TTL_MS = 5000;
const PERSISTENT = { mode: 'active-active', helperMode: 'persistent', helper: join(SAMPLE_HELPERS, 'persistent-helper.mjs') } as const;

jest.setTimeout(150_000);

const summaryOf = (fleet: RxfleetProcess): Record<string, unknown> | undefined => fleet.lines.find((l) => l.type === 'summary');
const work = (requests: RequestRecord[]): RequestRecord[] => requests.filter((r) => r.agent !== 'discovery');
const sum = async (provisioners: ProvisionerProcess[], name: string, labels: Record<string, string> = {}): Promise<number> => {
  const values = await Promise.all(provisioners.map(async (p) => sampleValue(await p.metrics(), name, { site: p.name, ...labels })));
  return values.reduce((a, b) => a + b, 0);
};
/** Each instance has read the claims bucket and run the round that follows (its first). */
const setUp = (provisioners: ProvisionerProcess[]): Promise<void[]> =>
  Promise.all(
    provisioners.map((p) =>
      waitFor(
        async () => sampleValue(await p.metrics().catch(() => ''), 'choria_provisioner_discover_cycles', { site: p.name }) >= 1,
        `${p.name} to set up`,
        30_000,
      ),
    ),
  );

describe("rxfleet provision active-active, as processes on a broker laid out as Choria's", () => {
  let aa: ElectionFleet | undefined;
  afterEach(async () => {
    await aa?.stop();
    aa = undefined;
  });

  it('three instances share a fleet: each node is provisioned once, each startup event handled by one instance, each claim won once', async () => {
    aa = await ElectionFleet.start(ELECTION_TTL_MS, { claimsTtlMs: 5000 });
    const provisioners = await Promise.all(['aa-a', 'aa-b', 'aa-c'].map((name) => aa!.provisioner(name, PERSISTENT)));
    await setUp(provisioners);

    const fleet = aa.simulate(['--nodes', '60', '--latency', '50ms', '--restart-delay', '100ms', '--exit-when-provisioned']);
    expect((await fleet.exited).code).toBe(0);
    expect(summaryOf(fleet)).toMatchObject({ nodes: 60, provisioned: 60, duplicates: 0 });
    const configures = work(tracedRequests(fleet)).filter((r) => r.action === 'configure');
    expect(configures).toHaveLength(60);
    // The queue group spreads the events: every instance took part (all three missing one in 60 draws: ~1e-10).
    expect(new Set(configures.map((r) => r.caller)).size).toBe(3);

    // The fleet booted after the instances' first round: every node was found by its startup
    // event, and each event reached exactly one instance.
    expect(await sum(provisioners, 'choria_provisioner_event_discovered')).toBe(60);
    expect(await sum(provisioners, 'choria_provisioner_discovered')).toBe(0);
    expect(await sum(provisioners, 'choria_provisioner_claims_total', { result: 'won' })).toBe(60);
    expect(await sum(provisioners, 'choria_provisioner_claims_total', { result: 'lapsed' })).toBe(0);
    expect(await sum(provisioners, 'choria_provisioner_provisioned')).toBe(60);
    for (const p of provisioners) {
      expect(
        sampleValue(await p.metrics(), 'choria_provisioner_claims_total', { site: p.name, identity: p.identity, result: 'won' }),
      ).toBeGreaterThan(0);
    }
    // A configured node's claim is kept until it ages out, so for a lifetime no instance takes it while it restarts.
    const bucket = await aa.claims();
    expect((await bucket.get(configures[0].identity))?.string()).toBe(
      provisioners.find((p) => p.callerId === configures[0].caller)?.identity,
    );
  });

  it('kill -9 of one instance mid-run: its claims lapse, the others take its nodes at their next round, none is lost, duplicates no more than its cycles in flight', async () => {
    // Claims live 20 s: they lapse before the survivors' next round (a minute after their first),
    // and outlive the survivors' queue of the dead instance's nodes (older sightings are refused).
    aa = await ElectionFleet.start(ELECTION_TTL_MS, { claimsTtlMs: 20_000 });
    // The victim's helper takes a second, so the cycle it is killed in is surely still under way.
    const provisioners = await Promise.all(
      ['aa-a', 'aa-b', 'aa-c'].map((name, i) =>
        aa!.provisioner(name, i === 0 ? { mode: 'active-active', helper: `${SCRIPTED_HELPER} delay 1000` } : { mode: 'active-active' }),
      ),
    );
    await setUp(provisioners);
    const [victim, ...survivors] = provisioners;

    // The lock window is shorter than the recovery, so the dead instance's node-side locks do not
    // hold the survivors off for go-choria's two minutes (P10, specified elsewhere).
    const fleet = aa.simulate([
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
    // Mid-run for the victim itself: the others may have won most of the fleet.
    await waitMidRun(fleet, victim.callerId, 3);
    const killedAt = Date.now();
    victim.process.child.kill('SIGKILL');
    await victim.process.exited;

    expect((await fleet.exited).code).toBe(0);
    const summary = summaryOf(fleet);
    expect(summary).toMatchObject({ nodes: 60, provisioned: 60 });
    const requests = work(tracedRequests(fleet));
    const inFlight = cyclesInFlightAt(requests, killedAt, victim.callerId);
    expect(inFlight).toBeGreaterThan(0);
    expect(summary?.duplicates).toBeLessThanOrEqual(inFlight);
    expect(requests.filter((r) => r.caller === victim.callerId && r.at > killedAt + 100)).toEqual([]);
    // Its nodes were taken by the survivors' rounds: they found, and won, what it had left.
    expect(await sum(survivors, 'choria_provisioner_discovered')).toBeGreaterThan(0);
  });

  it("a claim taken over mid-cycle lapses: the instance stops that node's cycle and sends it nothing more", async () => {
    aa = await ElectionFleet.start(ELECTION_TTL_MS, { claimsTtlMs: 1500 });
    const [instance] = await Promise.all([
      aa.provisioner('aa-lapse', { mode: 'active-active', helper: `${SCRIPTED_HELPER} delay 3000`, workers: 4 }),
    ]);
    await setUp([instance]);
    const fleet = aa.simulate(['--nodes', '3', '--restart-delay', '100ms']);
    const begun = (): Set<string> => new Set(work(tracedRequests(fleet)).map((r) => r.identity));
    await waitFor(() => begun().size === 3, 'every node to be in its cycle (the helper takes 3 s)');

    // Someone else (here the administrator) writes the node's claim while its helper runs, and keeps it.
    const bucket = await aa.claims();
    const taken = 'node-1.example.net';
    await bucket.put(taken, 'another-provisioner.example.net');
    const keep = setInterval(() => void bucket.put(taken, 'another-provisioner.example.net').catch(() => undefined), 500);
    try {
      const lapsed = await instance.process.next((l) => typeof l.msg === 'string' && l.msg.startsWith(`the claim on ${taken} lapsed`));
      expect(lapsed.msg).toBe(`the claim on ${taken} lapsed (another provisioner wrote it): its cycle was stopped`);
      // The other two finish; the taken one is never configured or restarted by this instance.
      await waitFor(
        () => work(tracedRequests(fleet)).filter((r) => r.action === 'restart').length === 2,
        'the other nodes to be provisioned',
        20_000,
      );
      await new Promise((r) => setTimeout(r, 1000));
      expect(work(tracedRequests(fleet)).filter((r) => r.identity === taken && ['configure', 'restart'].includes(r.action))).toEqual([]);
      const metrics = await instance.metrics();
      expect(sampleValue(metrics, 'choria_provisioner_claims_total', { site: instance.name, result: 'lapsed' })).toBe(1);
      expect(sampleValue(metrics, 'choria_provisioner_claims_held', { site: instance.name })).toBe(0);
      expect((await bucket.get(taken))?.string()).toBe('another-provisioner.example.net');
    } finally {
      clearInterval(keep);
    }
  });

  it('a broker restart: the instances reconnect, their claims outlive the outage, every node ends provisioned, duplicates no more than the cycles in flight', async () => {
    aa = await ElectionFleet.start(ELECTION_TTL_MS, { claimsTtlMs: 30_000 });
    const provisioners = await Promise.all(['aa-a', 'aa-b', 'aa-c'].map((name) => aa!.provisioner(name, { ...PERSISTENT, debug: true })));
    await setUp(provisioners);
    const fleet = aa.simulate(['--nodes', '60', '--latency', '150ms', '--restart-delay', '100ms', '--exit-when-provisioned']);
    await waitFor(
      () => work(tracedRequests(fleet)).filter((r) => r.action === 'restart').length >= 10,
      '10 nodes to be provisioned',
      60_000,
    );

    const downAt = Date.now();
    await aa.restartBroker(1000);
    expect((await fleet.exited).code).toBe(0);
    const summary = summaryOf(fleet);
    expect(summary).toMatchObject({ nodes: 60, provisioned: 60 });
    expect(summary?.duplicates).toBeLessThanOrEqual(cyclesInFlightAt(work(tracedRequests(fleet)), downAt));
    expect(await sum(provisioners, 'choria_provisioner_claims_total', { result: 'lapsed' })).toBe(0);
    // Each ran a round at once after reconnecting (startup events sent meanwhile would have been lost).
    for (const p of provisioners) {
      const reconnectedAt = Number(
        (await p.process.next((l) => typeof l.msg === 'string' && l.msg.startsWith('reconnected to NATS'))).time,
      );
      const rounds = p.process.lines.filter((l) => l.msg === 'discovering nodes in provisioning mode').map((l) => Number(l.time));
      expect(rounds.some((at) => at >= reconnectedAt && at < reconnectedAt + 5000)).toBe(true);
    }
  });
});
