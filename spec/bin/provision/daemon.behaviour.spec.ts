import { NatsConnection, connect } from '@nats-io/transport-node';
import { SchedulerLike, asyncScheduler } from 'rxjs';
import { CycleError } from '../../../lib/provision/cycle/provisionCycle';
import { useNatsServer } from '../../helpers/nats';
import {
  SCRIPTED_HELPER,
  UPSTREAM_NAME_FINDINGS,
  capturingLogger,
  promtool,
  sampleValue,
  startProvisionerWorld,
} from '../../helpers/provisioner';
import { waitFor } from '../../helpers/waitFor';
import { md5Hex } from '../../../lib/choria/protocol/encoding';
import { newRequestId } from '../../../lib/choria/protocol/subjects';

const byIdentity = `${SCRIPTED_HELPER} by-identity`;
const names =
  (...list: string[]) =>
  (i: number) =>
    list[i - 1];

/** A scheduler whose clock can be moved forward: timers still run on real time. */
function jumpingClock(): { scheduler: SchedulerLike; jump(ms: number): void } {
  let offset = 0;
  return {
    scheduler: {
      now: () => asyncScheduler.now() + offset,
      schedule: asyncScheduler.schedule.bind(asyncScheduler) as SchedulerLike['schedule'],
    },
    jump: (ms) => void (offset += ms),
  };
}

// End to end over a real nats-server: the simulated fleet, real helper processes (the scripted
// helper acts on the node's name: defer-*, shutdown-*, fail-*, badjson-*, slow-*, else ok).
describe('the provisioner daemon, end to end', () => {
  const server = useNatsServer();
  let raw: NatsConnection;
  beforeAll(async () => {
    raw = await connect({ servers: server().url });
  });
  afterAll(async () => {
    await raw.close();
  });

  it('announces itself with a startup event in the legacy format, component provisioner', async () => {
    const events: Array<Record<string, unknown>> = [];
    raw.subscribe('choria.lifecycle.event.startup.provisioner', { callback: (_, msg) => void events.push(msg.json()) });
    await raw.flush();
    const world = await startProvisionerWorld(server().url, { noFleet: true, identity: 'announcer.example.net' });
    try {
      await waitFor(() => events.length === 1, 'the startup event');
      expect(events[0]).toMatchObject({
        protocol: 'io.choria.lifecycle.v1.startup',
        identity: 'announcer.example.net',
        component: 'provisioner',
        version: '0.0.0',
      });
      expect(events[0]).not.toHaveProperty('specversion');
    } finally {
      await world.stop();
    }
  });

  // Issue 14 item 6: replies to request ids nobody waits for were counted only in memory.
  it('counts junk and replies nobody waits for in their series, logging a flood in a few lines', async () => {
    const { logger, messages } = capturingLogger();
    // The reply subscription is made with the first request, the discovery at start, and reaches
    // the server before that request does (one connection keeps the order): once the discovery is
    // heard here, the subscription is in place.
    let discoveries = 0;
    const spy = raw.subscribe('provisioning.broadcast.agent.discovery', { callback: () => void discoveries++ });
    await raw.flush();
    const world = await startProvisionerWorld(server().url, { noFleet: true, identity: 'counter.example.net', logger });
    try {
      const inbox = `provisioning.reply.${md5Hex('choria=counter.example.net')}`;
      await waitFor(() => discoveries >= 1, 'the first discovery');
      spy.unsubscribe();
      for (let i = 0; i < 50; i++) {
        raw.publish('choria.lifecycle.event.startup.provision_mode_server', `junk ${i}`);
        raw.publish(`${inbox}.${newRequestId()}`, 'late');
      }
      await raw.flush();
      await waitFor(
        async () => (await world.metric('choria_provisioner_unexpected_replies_total', { reason: 'unsolicited' })) === 50,
        'the unsolicited replies to be counted',
      );
      await waitFor(
        async () => (await world.metric('choria_provisioner_malformed_input_total', { source: 'lifecycle_event' })) === 50,
        'the junk events to be counted',
      );
      expect(await world.metric('choria_provisioner_unexpected_replies_total', { reason: 'stranger' })).toBe(0);
      // Five of each in full; the rest wait for the minute's summary.
      expect(messages().filter((m) => m.startsWith('refused a malformed lifecycle'))).toHaveLength(5);
      expect(messages().filter((m) => m.startsWith('ignored a reply'))).toHaveLength(5);
    } finally {
      await world.stop();
    }
    // The stop logs the summaries still pending.
    expect(messages().filter((m) => m.startsWith('45 more like this'))).toHaveLength(2);
  });

  it('helper outcomes: ok, defer, shutdown, failure, bad JSON and timeout each end as upstream says, and the metrics move as §5 says', async () => {
    const identities = ['ok-1', 'ok-2', 'defer-1', 'shutdown-1', 'fail-1', 'badjson-1', 'slow-1'];
    const { logger, messages } = capturingLogger();
    const world = await startProvisionerWorld(server().url, {
      helper: byIdentity,
      workers: 7,
      // Long enough for seven Node.js helpers starting at once on a loaded 2-core machine; slow-1
      // sleeps for ever and still meets it.
      yaml: ['rxfleet: {helper_timeout: 4s}'],
      fleet: { nodes: identities.length, identity: names(...identities) },
      noFleet: true,
      logger,
    });
    try {
      // The fleet boots once the daemon's first discovery has ended, so every node is found by its
      // startup event alone: a node up in time to answer that discovery would be sighted twice,
      // and one whose first cycle had already failed would start a second (CI has seen it).
      await waitFor(() => messages().some((m) => m.startsWith('discovery found')), 'the first discovery to end');
      await world.startFleet();
      // Bad input on the wire is counted and changes nothing else.
      raw.publish('choria.lifecycle.event.startup.provision_mode_server', '{"not": "an event"');
      await waitFor(
        async () =>
          (await world.metric('choria_provisioner_provisioned')) + (await world.metric('choria_provisioner_provision_errors')) === 7,
        'every node to finish',
        30_000,
      );
      await waitFor(() => world.fleet().stats().provisioned === 2 && world.fleet().stats().shutdown === 1, 'the nodes to restart or stop');
      const fleet = world.fleet();
      const state = Object.fromEntries(fleet.nodes().map((n) => [n.identity, [n.state, n.configured]]));
      expect(state).toEqual({
        'ok-1': ['provisioned', 1],
        'ok-2': ['provisioned', 1],
        'defer-1': ['provisioning', 0],
        'shutdown-1': ['shutdown', 0],
        'fail-1': ['provisioning', 0],
        'badjson-1': ['provisioning', 0],
        'slow-1': ['provisioning', 0],
      });
      expect(fleet.node('shutdown-1')?.shutdownRequested).toBe(true);

      const text = await world.scrape();
      const value = (name: string, labels: Record<string, string> = {}) => sampleValue(text, name, { site: 'spec', ...labels });
      expect({
        provisioned: value('choria_provisioner_provisioned'),
        provisionErrors: value('choria_provisioner_provision_errors'),
        helperErrors: value('choria_provisioner_helper_errors'),
        helperRuns: value('choria_provisioner_helper_time_count'),
        shutdownRequests: value('choria_provisioner_helper_shutdown_requests'),
        eventDiscovered: value('choria_provisioner_event_discovered'),
        discovered: value('choria_provisioner_discovered'),
        inventory: value('choria_provisioner_rpc_time_count', { rpc: 'rpcutil#inventory' }),
        configure: value('choria_provisioner_rpc_time_count', { rpc: 'choria_provision#configure' }),
        restart: value('choria_provisioner_rpc_time_count', { rpc: 'choria_provision#restart' }),
        shutdown: value('choria_provisioner_rpc_time_count', { rpc: 'choria_provision#shutdown' }),
        rpcErrors: value('choria_provisioner_rpc_errors', { rpc: 'rpcutil#inventory' }),
        busy: value('choria_provisioner_busy_workers'),
        queued: value('choria_provisioner_work_queue_entries'),
        // Provisioned and shut-down nodes keep their key for the settle time.
        held: value('choria_provisioner_waiting_nodes'),
        paused: value('choria_provisioner_paused'),
        malformedEvents: value('choria_provisioner_malformed_input_total', { source: 'lifecycle_event' }),
      }).toEqual({
        provisioned: 3, // P7: the helper's shutdown counts as provisioned, as upstream.
        provisionErrors: 4,
        helperErrors: 3, // fail, bad JSON, timeout; a deferral is not a helper error.
        helperRuns: 7,
        shutdownRequests: 1,
        eventDiscovered: 7,
        discovered: 0,
        inventory: 7,
        configure: 2,
        restart: 2,
        shutdown: 1,
        rpcErrors: 0,
        busy: 0,
        queued: 0,
        held: 3,
        paused: 0,
        malformedEvents: 1,
      });
      const { code, output } = await promtool(text);
      expect([0, 3]).toContain(code);
      // Without leader_election go-choria starts no election, so its series are not there.
      expect(text).not.toMatch(/^choria_election_/m);
      // go-choria's connector series, fed by the daemon's own connection and codec: one first
      // connection, every reply's hash checked (v1: choria_insecure), nothing refused at the envelope.
      expect(sampleValue(text, 'choria_connector_initial_connect_time_count')).toBe(1);
      expect(sampleValue(text, 'choria_connector_reconnections')).toBe(0);
      expect(sampleValue(text, 'choria_protocol_valid', { version: '1' })).toBeGreaterThanOrEqual(7);
      expect(sampleValue(text, 'choria_protocol_error', { version: '1' })).toBe(0);
      expect(
        output
          .split('\n')
          .filter((l) => l.trim() !== '')
          .sort(),
      ).toEqual([...UPSTREAM_NAME_FINDINGS].sort());
    } finally {
      await world.stop();
    }
  });

  it('a node that goes silent: each attempt times out, five of them, then one RPC error and one provision error', async () => {
    const world = await startProvisionerWorld(server().url, { fleet: { nodes: 2, silent: 1 }, tuning: { rpcTimeoutMs: 200 } });
    try {
      await waitFor(
        async () => (await world.metric('choria_provisioner_provision_errors')) === 1 && world.fleet().stats().provisioned === 1,
        'the silent node to fail and the other to be provisioned',
      );
      expect(await world.metric('choria_provisioner_rpc_time_count', { rpc: 'rpcutil#inventory' })).toBe(6);
      expect(await world.metric('choria_provisioner_rpc_errors', { rpc: 'rpcutil#inventory' })).toBe(1);
      expect(world.fleet().node('node-1.example.net')?.state).toBe('provisioning');
    } finally {
      await world.stop();
    }
  });

  it('a sighting that waited more than twice the interval is refused before any RPC, as a provision error', async () => {
    const clock = jumpingClock();
    // Booted first, so the daemon's first discovery is their one sighting: nothing re-sights them
    // once the clock has jumped.
    const world = await startProvisionerWorld(server().url, {
      fleetFirst: true,
      helper: byIdentity,
      workers: 1,
      yaml: ['rxfleet: {helper_timeout: 1s}'],
      fleet: { nodes: 2, identity: names('slow-1', 'ok-2') },
      tuning: { scheduler: clock.scheduler },
    });
    try {
      const failures: string[] = [];
      world.daemon.results$.subscribe(({ ticket, outcome }) => {
        if (outcome.status === 'failed' && outcome.error instanceof CycleError)
          failures.push(`${ticket.key} ${outcome.error.step} ${outcome.error.message}`);
      });
      // slow-1 holds the only worker; ok-2 waits behind it while three intervals pass.
      await waitFor(() => world.daemon.status().queued === 1, 'ok-2 to wait for a worker');
      clock.jump(3 * 60_000);
      await waitFor(() => failures.length === 2, 'both cycles to end');
      expect(failures[0]).toMatch(/^slow-1 helper /);
      expect(failures[1]).toMatch(/^ok-2 stale skipping node that's been waiting 3m\d+\.\d+s$/);
      expect(world.fleet().node('ok-2')?.requests).toEqual({});
      expect(await world.metric('choria_provisioner_provision_errors')).toBe(2);
    } finally {
      await world.stop();
    }
  });

  it('a full queue refuses and forgets: refusals are counted on their own, not as discovered (P3)', async () => {
    // Booted before the daemon starts: its first discovery hears them, in order.
    const world = await startProvisionerWorld(server().url, {
      fleetFirst: true,
      helper: byIdentity,
      workers: 1,
      yaml: ['rxfleet: {helper_timeout: 1s, queue_capacity: 2}'],
      fleet: { nodes: 6, identity: names('slow-1', 'ok-2', 'ok-3', 'ok-4', 'ok-5', 'ok-6') },
    });
    try {
      await waitFor(() => world.fleet().stats().provisioned === 2, 'the two queued nodes to be provisioned');
      expect(await world.metric('choria_provisioner_admission_refused_total', { reason: 'full' })).toBe(3);
      expect(await world.metric('choria_provisioner_discovered')).toBe(3);
      const touched = world
        .fleet()
        .nodes()
        .filter((n) => Object.keys(n.requests).length > 0)
        .map((n) => n.identity);
      expect(touched).toEqual(['slow-1', 'ok-2', 'ok-3']);
    } finally {
      await world.stop();
    }
  });

  it('pause and resume stop and restart discovery and events', async () => {
    const { logger, messages } = capturingLogger();
    const world = await startProvisionerWorld(server().url, { noFleet: true, logger, tuning: { intervalMs: 250 } });
    try {
      await waitFor(async () => (await world.metric('choria_provisioner_discover_cycles')) >= 1, 'the first discovery');
      world.daemon.gate.pause();
      expect(await world.metric('choria_provisioner_paused')).toBe(1);
      const cycles = await world.metric('choria_provisioner_discover_cycles');
      const fleet = await world.startFleet();
      await fleet.whenBooted();
      // Every node's startup event is dropped, and tick after tick skips discovery.
      await waitFor(
        () =>
          messages().filter((m) => m === 'Skipping discovery while paused').length >= 2 &&
          messages().filter((m) => m === 'Skipping event processing while paused').length === 6,
        'two skipped ticks and six dropped events',
      );
      expect(await world.metric('choria_provisioner_discover_cycles')).toBe(cycles);
      expect(await world.metric('choria_provisioner_event_discovered')).toBe(0);
      expect(fleet.stats().requests).toBe(0);

      world.daemon.gate.resume();
      await waitFor(() => fleet.stats().provisioned === 6, 'every node provisioned after resuming');
      // Found by discovery alone (their events came while paused). With a 250 ms interval, nodes
      // waiting longer than that are re-admitted by the next round (P1), counted apart.
      expect(await world.metric('choria_provisioner_discovered')).toBeGreaterThanOrEqual(6);
      expect(await world.metric('choria_provisioner_event_discovered')).toBe(0);
      expect(await world.metric('choria_provisioner_paused')).toBe(0);
    } finally {
      await world.stop();
    }
  });

  it('a pause stops a retrying RPC at the next attempt boundary', async () => {
    const world = await startProvisionerWorld(server().url, {
      fleet: { nodes: 1, silent: 1 },
      tuning: { rpcTimeoutMs: 300, retryBackoffMs: [300] },
    });
    try {
      const failures: string[] = [];
      world.daemon.results$.subscribe(({ outcome }) => outcome.status === 'failed' && failures.push((outcome.error as Error).message));
      await waitFor(
        async () => (await world.metric('choria_provisioner_rpc_time_count', { rpc: 'rpcutil#inventory' })) === 1,
        'a first attempt',
      );
      world.daemon.gate.pause();
      await waitFor(() => failures.length === 1, 'the cycle to stop');
      expect(failures[0]).toBe('could not provision node-1.example.net: provisioning is paused, cannot perform rpcutil#inventory');
      expect(await world.metric('choria_provisioner_rpc_time_count', { rpc: 'rpcutil#inventory' })).toBeLessThan(5);
    } finally {
      await world.stop();
    }
  });

  it('re-admits a node whose sighting is older than the window while its first cycle still runs (P1)', async () => {
    const world = await startProvisionerWorld(server().url, {
      helper: byIdentity,
      workers: 2,
      yaml: ['rxfleet: {helper_timeout: 3s}'],
      fleet: { nodes: 1, identity: names('slow-1') },
      tuning: { intervalMs: 400 },
    });
    try {
      // Two cycles of the one node in flight at once: a duplicate costs less than a dropped node.
      await waitFor(() => world.fleet().node('slow-1')?.requests['rpcutil#inventory'] === 2, 'a second cycle of slow-1');
      expect(world.daemon.status().busyWorkers).toBe(2);
      // Upstream counts a node once while it is held: the re-admission has a series of its own.
      expect((await world.metric('choria_provisioner_discovered')) + (await world.metric('choria_provisioner_event_discovered'))).toBe(1);
      expect(
        (await world.metric('choria_provisioner_readmissions_total', { via: 'discovery' })) +
          (await world.metric('choria_provisioner_readmissions_total', { via: 'event' })),
      ).toBeGreaterThanOrEqual(1);
    } finally {
      await world.stop();
    }
  });
});
