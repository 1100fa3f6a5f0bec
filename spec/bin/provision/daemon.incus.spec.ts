import { NatsConnection, connect } from '@nats-io/transport-node';
import { Subject } from 'rxjs';
import { EventPayload } from '../../../lib/enricher/output/payload';
import { instanceEvent, subjectOf } from '../../helpers/enrichedEvents';
import { useNatsServer } from '../../helpers/nats';
import { ProvisionerWorld, capturingLogger, startProvisionerWorld } from '../../helpers/provisioner';
import { waitFor } from '../../helpers/waitFor';

// The Incus feed of `rxfleet provision` over a real nats-server: this spec stands in for `rxfleet
// enrich` by publishing exactly what it publishes (spec/bin/provision/incus.lxd.spec.ts runs the
// real enricher against a real LXD). The fleet's startup events go to a component the daemon does
// not listen to where a case needs the Incus feed to be the only source.
const UNHEARD = 'spec_unheard_component';
const FEED = ['rxfleet:', '  incus:', '    identity: "{name}.example.net"'];

describe('the provisioner daemon with the Incus feed (rxfleet.incus)', () => {
  const server = useNatsServer({ jetstream: false });
  let raw: NatsConnection;
  let world: ProvisionerWorld | undefined;
  beforeAll(async () => {
    raw = await connect({ servers: server().url });
  });
  afterEach(async () => {
    await world?.stop();
    world = undefined;
  });
  afterAll(async () => {
    await raw.close();
  });

  const publish = async (event: EventPayload): Promise<void> => {
    raw.publish(subjectOf(event), JSON.stringify(event));
    await raw.flush();
  };
  const incusEvents = async (w: ProvisionerWorld, result: string): Promise<number> =>
    w.metric('choria_provisioner_incus_events_total', { result });

  it('sights an instance the moment it comes up with an address, admits it counted in incus_discovered, and provisions it', async () => {
    const { logger, messages } = capturingLogger();
    world = await startProvisionerWorld(server().url, {
      yaml: FEED,
      noFleet: true,
      logger,
      fleet: { nodes: 1, identity: () => 'web1.example.net', component: UNHEARD },
    });
    const w = world;
    // The round at start has found nothing; the next is a minute away.
    await waitFor(async () => (await w.metric('choria_provisioner_discover_cycles')) === 1, 'the discovery round at start');
    await w.startFleet();
    await w.fleet().whenBooted();
    await publish(instanceEvent('instance-created', 'web1', { running: false }));
    await publish(instanceEvent('instance-started', 'web1', { ipv4: ['10.77.0.9'] }));
    await waitFor(() => w.fleet().stats().provisioned === 1, 'web1 provisioned');
    expect(await w.metric('choria_provisioner_incus_discovered')).toBe(1);
    expect(await w.metric('choria_provisioner_discovered')).toBe(0);
    expect(await w.metric('choria_provisioner_event_discovered')).toBe(0);
    expect(await w.metric('choria_provisioner_provisioned')).toBe(1);
    expect(await incusEvents(w, 'sighted')).toBe(1);
    expect(await incusEvents(w, 'not_up')).toBe(1);
    expect(messages()).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^Incus feed: sighting every instance of every project as it comes up with an address, from incus\.events\.\*\.instance\.>; identity \{name\}\.example\.net$/,
        ),
        'Incus instance default/web1 came up at 10.77.0.9 (instance-started): sighting web1.example.net',
        'Adding web1.example.net to the provision list after its Incus instance came up',
      ]),
    );
  });

  it('never runs a second cycle for a node discovery already holds: its Incus sighting is refused as held', async () => {
    world = await startProvisionerWorld(server().url, { yaml: FEED, fleetFirst: true, fleet: { nodes: 2 } });
    const w = world;
    await waitFor(async () => (await w.metric('choria_provisioner_discovered')) === 2, 'both nodes discovered');
    const refusedBefore = await w.metric('choria_provisioner_admission_refused_total', { reason: 'held' });
    await publish(instanceEvent('instance-started', 'node-1'));
    await waitFor(async () => (await incusEvents(w, 'sighted')) === 1, 'the Incus sighting');
    await waitFor(() => w.fleet().stats().provisioned === 2, 'both nodes provisioned');
    expect(await w.metric('choria_provisioner_admission_refused_total', { reason: 'held' })).toBe(refusedBefore + 1);
    expect(await w.metric('choria_provisioner_incus_discovered')).toBe(0);
    expect(w.fleet().stats()).toMatchObject({ configured: 2, duplicates: 0 });
  });

  it('drops an Incus sighting while paused, as any sighting', async () => {
    world = await startProvisionerWorld(server().url, { yaml: FEED, noFleet: true });
    const w = world;
    w.daemon.gate.pause();
    // The daemon's subscription may not have reached the server yet (core NATS drops what nobody
    // hears): the event is sent again until the feed has seen it. Every copy is dropped the same way.
    await waitFor(async () => {
      await publish(instanceEvent('instance-started', 'node-1'));
      return (await incusEvents(w, 'sighted')) >= 1;
    }, 'the Incus sighting');
    expect(await w.metric('choria_provisioner_incus_discovered')).toBe(0);
    expect(w.daemon.status().held).toBe(0);
  });

  it('counts every instance event by what became of it, and a message that is no enriched event as malformed input; the feed carries on', async () => {
    const yaml = [
      'rxfleet:',
      '  incus:',
      '    instances: ["web-*", "user.choria=provision"]',
      '    identity: "{config.user.choria-identity}"',
    ];
    const { logger, messages } = capturingLogger();
    world = await startProvisionerWorld(server().url, { yaml, noFleet: true, logger });
    const w = world;
    // Subscribed before the round at start: once it has run, the feed's subscription has had time to reach the server.
    await waitFor(async () => (await w.metric('choria_provisioner_discover_cycles')) === 1, 'the discovery round at start');
    raw.publish('incus.events.default.instance.instance-started.bad', '{"version": 1, "secret": "s3cret-in-config"');
    raw.publish(
      'incus.events.default.instance.instance-started.old',
      JSON.stringify({ ...instanceEvent('instance-started', 'old'), version: 2 }),
    );
    await publish(instanceEvent('instance-started', 'db-1'));
    await publish(instanceEvent('instance-started', 'web-1'));
    await publish(instanceEvent('instance-started', 'web-2', { config: { 'user.choria-identity': 'web-2.example.net' } }));
    await publish(instanceEvent('instance-updated', 'web-2', { config: { 'user.choria-identity': 'web-2.example.net' } }));
    await publish(instanceEvent('instance-stopped', 'web-2', { running: false, config: { 'user.choria-identity': 'web-2.example.net' } }));
    await waitFor(async () => (await incusEvents(w, 'not_up')) === 1, 'every event decided');
    expect(await w.metric('choria_provisioner_malformed_input_total', { source: 'incus_event' })).toBe(2);
    expect({
      unselected: await incusEvents(w, 'unselected'),
      unmapped: await incusEvents(w, 'unmapped'),
      sighted: await incusEvents(w, 'sighted'),
      already_up: await incusEvents(w, 'already_up'),
    }).toEqual({ unselected: 1, unmapped: 1, sighted: 1, already_up: 1 });
    expect(await w.metric('choria_provisioner_incus_discovered')).toBe(1);
    expect(messages()).toContain(
      'Incus instance default/web-1 came up but maps to no identity with {config.user.choria-identity}: its configuration has no user.choria-identity',
    );
    expect(messages().filter((m) => m.startsWith('refused a malformed incus_event'))).toHaveLength(2);
    expect(messages().join('\n')).not.toContain('s3cret-in-config');
  });

  it('reads events handed over in-process instead of NATS, with every default when the file has no rxfleet.incus', async () => {
    const events = new Subject<EventPayload>();
    world = await startProvisionerWorld(server().url, {
      noFleet: true,
      incusEvents: events,
      fleet: { nodes: 1, identity: () => 'c1', component: UNHEARD },
    });
    const w = world;
    await waitFor(async () => (await w.metric('choria_provisioner_discover_cycles')) === 1, 'the discovery round at start');
    await w.startFleet();
    await w.fleet().whenBooted();
    // On NATS it would be read only with rxfleet.incus in the file: here nothing listens there.
    await publish(instanceEvent('instance-started', 'nats-only'));
    events.next(instanceEvent('instance-started', 'c1'));
    await waitFor(() => w.fleet().stats().provisioned === 1, 'c1 provisioned');
    expect(await w.metric('choria_provisioner_incus_discovered')).toBe(1);
    expect(await incusEvents(w, 'sighted')).toBe(1);
  });
});
