import pino from 'pino';
import { Writable } from 'node:stream';
import { firstValueFrom, take, toArray } from 'rxjs';
import { BadMessages } from '../../../lib/choria/badMessages';
import { InvalidLifecycleComponentError } from '../../../lib/choria/errors';
import { LifecycleEvent, lifecycleEventJson, newLifecycleEvent } from '../../../lib/choria/lifecycle';
import { startSimulatedFleet } from '../../../streams/simulate/simulatedFleet';
import { lifecycleEvents } from '../../../streams/choria/lifecycleListener';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { useNatsServer } from '../../helpers/nats';
import { waitFor } from '../../helpers/waitFor';

describe('the lifecycle listener over a real nats-server', () => {
  const server = useNatsServer({ jetstream: false });
  let listener: FleetConnection;
  let publisher: FleetConnection;

  beforeAll(async () => {
    listener = await openNatsConnection({ servers: [server().url] });
    publisher = await openNatsConnection({ servers: [server().url] });
  });
  afterAll(async () => {
    await listener.drain();
    await publisher.drain();
  });

  for (const format of ['choria', 'cloudevents'] as const) {
    it(`yields the startup events of booting servers in the ${format} format`, async () => {
      const events = firstValueFrom(lifecycleEvents(listener.nc).pipe(take(3), toArray()));
      await listener.nc.flush();
      const fleet = await startSimulatedFleet({
        nc: publisher.nc,
        nodes: 3,
        lifecycleFormat: format,
        identity: (i) => `${format}-${i}.example.net`,
      });
      const seen = await events;
      await fleet.stop();
      expect(seen.map((e) => [e.type, e.format, e.identity, e.component, e.version])).toEqual(
        [1, 2, 3].map((i) => ['startup', format, `${format}-${i}.example.net`, 'provision_mode_server', '0.29.4']),
      );
    });
  }

  it('in a queue group each event reaches one member only; a plain listener beside them hears them all', async () => {
    const seenBy: string[][] = [[], [], []];
    const subscriptions = [
      lifecycleEvents(listener.nc, { queue: 'provisioners' }).subscribe((e) => seenBy[0].push(e.identity)),
      lifecycleEvents(listener.nc, { queue: 'provisioners' }).subscribe((e) => seenBy[1].push(e.identity)),
      lifecycleEvents(listener.nc).subscribe((e) => seenBy[2].push(e.identity)),
    ];
    await listener.nc.flush();
    const fleet = await startSimulatedFleet({ nc: publisher.nc, nodes: 40, identity: (i) => `queued-${i}.example.net` });
    const all = Array.from({ length: 40 }, (_, i) => `queued-${i + 1}.example.net`);
    await waitFor(() => seenBy[2].length >= 40 && seenBy[0].length + seenBy[1].length >= 40, 'every event to arrive');
    await listener.nc.flush();
    await fleet.stop();
    subscriptions.forEach((s) => s.unsubscribe());
    expect(seenBy[2]).toEqual(all);
    expect([...seenBy[0], ...seenBy[1]].sort()).toEqual([...all].sort());
  });

  it('refuses a component that would widen the subscription, before subscribing', () => {
    // It throws when called, so there is no Observable to subscribe to, let alone a NATS subscription.
    expect(() => lifecycleEvents(listener.nc, { component: 'provision_mode_server.>' })).toThrow(InvalidLifecycleComponentError);
    expect(() => lifecycleEvents(listener.nc, { component: '*' })).toThrow('invalid lifecycle component: *');
  });

  it('counts and skips malformed events and events of another type, and carries on', async () => {
    const badMessages = new BadMessages();
    const events = firstValueFrom(lifecycleEvents(listener.nc, { component: 'spec_component', badMessages }).pipe(take(1)));
    await listener.nc.flush();
    const subject = 'choria.lifecycle.event.startup.spec_component';
    publisher.nc.publish(subject, 'not json at all');
    // Larger than any event (a real one is under 1 KiB), and nested past any event's depth: refused unread (issue 37).
    const startup = '"protocol":"io.choria.lifecycle.v1.startup","id":"1","component":"spec_component","timestamp":1';
    publisher.nc.publish(subject, `{${startup},"identity":"${'x'.repeat(300_000)}"}`);
    publisher.nc.publish(subject, `{${startup},"identity":${'['.repeat(1000)}${']'.repeat(1000)}}`);
    publisher.nc.publish(subject, '{"specversion":"1.0","source":"somewhere.else","id":"1","type":"x"}');
    publisher.nc.publish(
      subject,
      lifecycleEventJson(newLifecycleEvent('shutdown', { identity: 'wrong-type', component: 'spec_component' }), 'choria'),
    );
    publisher.nc.publish(
      subject,
      lifecycleEventJson(newLifecycleEvent('startup', { identity: 'good', component: 'spec_component' }), 'cloudevents'),
    );
    const event: LifecycleEvent = await events;
    expect(event.identity).toBe('good');
    expect(badMessages.count('lifecycle', 'not_json')).toBe(1);
    expect(badMessages.count('lifecycle', 'protocol')).toBe(1);
    expect(badMessages.count('lifecycle', 'oversized')).toBe(2);
    expect(badMessages.count()).toBe(4);
  });

  it('listens to every type with `*`, and unsubscribing stops the NATS subscription', async () => {
    const seen: string[] = [];
    const subscription = lifecycleEvents(listener.nc, { type: '*', component: 'any_component' }).subscribe((e) => seen.push(e.type));
    await listener.nc.flush();
    for (const type of ['startup', 'shutdown', 'provisioned', 'upgraded'] as const) {
      publisher.nc.publish(
        `choria.lifecycle.event.${type}.any_component`,
        lifecycleEventJson(newLifecycleEvent(type, { identity: 'n', component: 'any_component' }), 'choria'),
      );
    }
    // Flushing the publisher, then the listener, means the server has delivered everything published so far.
    await publisher.nc.flush();
    await listener.nc.flush();
    expect(seen.sort()).toEqual(['provisioned', 'shutdown', 'startup', 'upgraded']);
    subscription.unsubscribe();
    publisher.nc.publish(
      'choria.lifecycle.event.alive.any_component',
      lifecycleEventJson(newLifecycleEvent('alive', { identity: 'n', component: 'any_component' }), 'choria'),
    );
    await publisher.nc.flush();
    await listener.nc.flush();
    expect(seen).toHaveLength(4);
  });
});

describe('the lifecycle listener on a broker that refuses the subscription', () => {
  const server = useNatsServer({
    jetstream: false,
    config: `authorization: { users: [ { user: fenced, password: fenced-pw, permissions: { subscribe: { deny: ["choria.lifecycle.>"] } } } ] }`,
  });

  it('logs the refusal, never errors, and subscribes again with a growing wait (the daemon goes on on discovery)', async () => {
    const connection = await openNatsConnection({ servers: [server().url], user: 'fenced', password: 'fenced-pw' });
    const chunks: string[] = [];
    const logger = pino({ level: 'error' }, new Writable({ write: (chunk, _enc, done) => (chunks.push(String(chunk)), done()) }));
    let failed: unknown;
    let completed = false;
    const subscription = lifecycleEvents(connection.nc, { logger, resubscribeMs: 50 }).subscribe({
      error: (e: unknown) => (failed = e),
      complete: () => (completed = true),
    });
    try {
      await waitFor(() => chunks.length >= 3, 'three refusals', 10_000);
      const lines = chunks.map((c) => JSON.parse(c) as { msg: string; retryInMs: number });
      expect(lines[0].msg).toMatch(
        /^the broker refused the lifecycle subscription: Permissions Violation for Subscription to "choria\.lifecycle\.event\.startup\.provision_mode_server"; nodes are found by discovery only until it is accepted; subscribing again in 50ms$/,
      );
      expect(lines.slice(0, 3).map((l) => l.retryInMs)).toEqual([50, 100, 200]);
      expect(failed).toBeUndefined();
      expect(completed).toBe(false);
    } finally {
      subscription.unsubscribe();
      await connection.drain();
    }
  });
});
