import { NatsConnection, connect } from '@nats-io/transport-node';
import { ElectionEvent } from '../../../lib/election/campaign';
import { CycleError } from '../../../lib/provision/cycle/provisionCycle';
import { createElectionBucket } from '../../../streams/election/electionBucket';
import { natsElectionStore } from '../../../streams/election/natsElectionStore';
import { useNatsServer } from '../../helpers/nats';
import { ProvisionerWorld, SCRIPTED_HELPER, capturingLogger, startProvisionerWorld } from '../../helpers/provisioner';
import { waitFor } from '../../helpers/waitFor';

const ELECTION = ['leader_election: true', 'rxfleet: {election_api_prefix: $JS.API}'];

describe('stopping the daemon (DECISIONS P9)', () => {
  const server = useNatsServer();

  it('stops discovery and admission at once, lets the nodes in flight finish, drops the queued ones', async () => {
    const world = await startProvisionerWorld(server().url, { workers: 2, fleet: { nodes: 6, latencyMs: 300 } });
    let stopped = false;
    try {
      await waitFor(
        () => world.daemon.status().busyWorkers === 2 && world.daemon.status().queued === 4,
        'two nodes in flight and four waiting',
      );
      const inFlight = world.daemon.status().busyWorkers;
      const report = await world.daemon.stop({ graceMs: 30_000 });
      stopped = true;
      expect(report).toEqual({ abandoned: 0 });
      expect(world.daemon.status().state).toBe('stopped');
      const fleet = world.fleet();
      expect(fleet.stats().configured).toBe(inFlight);
      // Nobody else was sent anything, before or after the stop.
      expect(fleet.nodes().filter((n) => Object.keys(n.requests).length > 0)).toHaveLength(inFlight);
      await expect(fetch(`http://127.0.0.1:${world.daemon.port}/health`)).rejects.toThrow();
    } finally {
      if (!stopped) await world.daemon.stop();
      await world.stop();
    }
  });

  it('aborts what is still in flight when the grace period ends, and still stops cleanly', async () => {
    const world = await startProvisionerWorld(server().url, {
      helper: `${SCRIPTED_HELPER} by-identity`,
      yaml: ['rxfleet: {helper_timeout: 60s}'],
      fleet: { nodes: 1, identity: () => 'slow-1' },
    });
    try {
      const failures: CycleError[] = [];
      world.daemon.results$.subscribe(({ outcome }) => outcome.status === 'failed' && failures.push(outcome.error as CycleError));
      await waitFor(() => world.daemon.status().busyWorkers === 1, 'the slow helper to run');
      // A moment for the helper to be spawned, so the abort meets a running process group.
      await waitFor(
        async () => (await world.metric('choria_provisioner_rpc_time_count', { rpc: 'rpcutil#inventory' })) === 1,
        'the inventory',
      );
      expect(await world.daemon.stop({ graceMs: 200 })).toEqual({ abandoned: 1 });
      expect(failures.map((f) => f.message)).toEqual([
        'could not invoke configure helper: ' + `${SCRIPTED_HELPER} by-identity was aborted: its process group was killed`,
      ]);
    } finally {
      await world.stop();
    }
  });
});

describe('leader_election: true', () => {
  const server = useNatsServer();
  let admin: NatsConnection;
  const worlds: ProvisionerWorld[] = [];

  beforeAll(async () => {
    admin = await connect({ servers: server().url });
    await createElectionBucket(admin, { ttlMs: 2000 });
  });
  afterEach(async () => {
    for (const world of worlds.splice(0)) await world.stop();
  });
  afterAll(async () => {
    await admin.close();
  });

  it('the instance is paused until it wins; winning discovers at once; a second instance stands by and sends nothing', async () => {
    const a = await startProvisionerWorld(server().url, { identity: 'prov-a.example.net', yaml: ELECTION, fleetFirst: true });
    worlds.push(a);
    // Before the election has run: paused, nothing discovered.
    expect(a.daemon.status()).toMatchObject({ paused: true, leader: false });
    expect(await a.metric('choria_provisioner_paused')).toBe(1);
    expect(await a.metric('choria_provisioner_discover_cycles')).toBe(0);
    const b = await startProvisionerWorld(server().url, { identity: 'prov-b.example.net', yaml: ELECTION, noFleet: true });
    worlds.push(b);

    await waitFor(() => a.fleet().stats().provisioned === 6, 'the fleet provisioned by the leader');
    const [leader, standby] = a.daemon.status().leader ? [a, b] : [b, a];
    expect(leader.daemon.status()).toMatchObject({ paused: false, leader: true });
    // The interval is a minute: the one discovery was the one winning triggered.
    expect(await leader.metric('choria_provisioner_discover_cycles')).toBe(1);
    expect(await leader.metric('choria_provisioner_discovered')).toBe(6);
    expect(await leader.metric('choria_election_leader', { identity: leader.daemon.identity })).toBe(1);
    expect(await leader.metric('choria_election_campaigns', { state: 'leader' })).toBeGreaterThanOrEqual(1);
    // The leader refreshes on the first step of the TwentySec table, jittered: 0.25 to 0.75 s.
    const interval = await leader.metric('choria_election_interval_seconds', { election: 'provisioner', identity: leader.daemon.identity });
    expect(interval).toBeGreaterThanOrEqual(0.25);
    expect(interval).toBeLessThan(0.75);

    expect(standby.daemon.status()).toMatchObject({ paused: true, leader: false });
    expect(await standby.metric('choria_provisioner_paused')).toBe(1);
    expect(await standby.metric('choria_provisioner_discover_cycles')).toBe(0);
    expect(await standby.metric('choria_provisioner_rpc_time_count', { rpc: 'rpcutil#inventory' })).toBe(0);
    expect(await standby.metric('choria_election_campaigns', { state: 'candidate' })).toBeGreaterThanOrEqual(1);
    expect(a.fleet().stats().lockRefusals).toBe(0);
    // Both are ready: a standby that campaigns is doing its job.
    expect([a.daemon.ready(), b.daemon.ready()]).toEqual([true, true]);
  });

  it('losing the key pauses the instance and resets admission; it campaigns again', async () => {
    const world = await startProvisionerWorld(server().url, { identity: 'prov-c.example.net', yaml: ELECTION });
    worlds.push(world);
    const events: ElectionEvent[] = [];
    world.daemon.election$.subscribe((e) => events.push(e));
    await waitFor(() => world.fleet().stats().provisioned === 6, 'the fleet provisioned');
    expect(world.daemon.status().held).toBe(6);
    // Another provisioner (a Go one, say) writes the key: the next refresh fails.
    admin.publish('$KV.CHORIA_LEADER_ELECTION.provisioner', 'go-provisioner.example.net');
    await waitFor(() => events.includes('lost'), 'the loss');
    expect(world.daemon.status()).toMatchObject({ paused: true, leader: false, held: 0, queued: 0 });
    expect(await world.metric('choria_provisioner_paused')).toBe(1);
    expect(await world.metric('choria_provisioner_waiting_nodes')).toBe(0);
    // Once the other's key expires (2 s TTL), this instance wins again.
    await waitFor(() => events.filter((e) => e === 'won').length === 2, 'winning again', 15_000);
    expect(world.daemon.status().paused).toBe(false);
  });

  it('election set-up failures are retried, logged and counted; the instance stays paused and not ready (P8)', async () => {
    const { logger, messages } = capturingLogger();
    const nc = await connect({ servers: server().url });
    try {
      const world = await startProvisionerWorld(server().url, {
        identity: 'prov-d.example.net',
        yaml: ELECTION,
        logger,
        // No such bucket: reading its TTL fails until someone creates it.
        electionStore: natsElectionStore({ nc, bucket: 'NO_SUCH_BUCKET', apiPrefix: '$JS.API', timeoutMs: 500 }),
        tuning: { electionSetupRetryMs: () => 50 },
      });
      worlds.push(world);
      await waitFor(async () => (await world.metric('choria_election_setup_failures_total')) >= 3, 'three failed set-ups');
      expect(messages().filter((m) => m.startsWith('leader election set-up failed')).length).toBeGreaterThanOrEqual(3);
      expect(world.daemon.status()).toMatchObject({ paused: true, electionReady: false });
      expect(world.daemon.ready()).toBe(false);
      expect((await fetch(`http://127.0.0.1:${world.daemon.port}/ready`)).status).toBe(503);
      expect(world.fleet().stats().requests).toBe(0);
    } finally {
      for (const world of worlds.splice(0)) await world.stop();
      await nc.close();
    }
  });
});
