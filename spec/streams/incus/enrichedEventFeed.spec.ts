import { NatsConnection, connect } from '@nats-io/transport-node';
import { EventPayload } from '../../../lib/enricher/output/payload';
import { enrichedInstanceEvents, instanceEventSubjects } from '../../../streams/incus/enrichedEventFeed';
import { instanceEvent, subjectOf } from '../../helpers/enrichedEvents';
import { useNatsServer } from '../../helpers/nats';
import { waitFor } from '../../helpers/waitFor';

// The enricher's instance subjects read back, on a real nats-server whose `reader` may not
// subscribe to them (a provisioning account without the grant).
describe('enrichedInstanceEvents', () => {
  const server = useNatsServer({
    jetstream: false,
    config:
      'authorization { users: [ { user: ok, password: ok }, { user: reader, password: reader, permissions: { subscribe: { deny: ["incus.events.>"] } } } ] }',
  });
  let publisher: NatsConnection;
  beforeAll(async () => {
    publisher = await connect({ servers: server().url, user: 'ok', pass: 'ok' });
  });
  afterAll(async () => {
    await publisher.close();
  });

  it('subscribes to <prefix>.*.instance.>: instance events of every project in order, other kinds and prefixes not at all, malformed ones reported and skipped', async () => {
    const nc = await connect({ servers: server().url, user: 'ok', pass: 'ok' });
    const got: EventPayload[] = [];
    const malformed: string[] = [];
    const sub = enrichedInstanceEvents(nc, {
      subjectPrefix: 'site.incus',
      onMalformed: (subject, reason) => malformed.push(`${subject}: ${reason}`),
    }).subscribe((e) => got.push(e));
    try {
      expect(instanceEventSubjects('site.incus')).toBe('site.incus.*.instance.>');
      await nc.flush();
      const a = instanceEvent('instance-started', 'a');
      const b = instanceEvent('instance-stopped', 'b', { project: 'p2', running: false });
      publisher.publish(subjectOf(a, 'site.incus'), JSON.stringify(a));
      publisher.publish('site.incus.default.network.network-updated.br0', JSON.stringify({ ...a, kind: 'network' }));
      publisher.publish(subjectOf(a, 'incus.events'), JSON.stringify(a));
      publisher.publish('site.incus.default.instance.instance-started.x', 'not json');
      publisher.publish(subjectOf(b, 'site.incus'), JSON.stringify(b));
      await waitFor(() => got.length === 2, 'both instance events');
      expect(got.map((e) => `${e.project}/${e.name} ${e.action}`)).toEqual(['default/a instance-started', 'p2/b instance-stopped']);
      expect(malformed).toEqual(['site.incus.default.instance.instance-started.x: not UTF-8 JSON']);
    } finally {
      sub.unsubscribe();
      await nc.close();
    }
  });

  it('a subscription the broker refuses is reported once and completes the stream, never errors it', async () => {
    const nc = await connect({ servers: server().url, user: 'reader', pass: 'reader' });
    const errors: string[] = [];
    let ended = '';
    enrichedInstanceEvents(nc, { subjectPrefix: 'incus.events', onError: (e) => errors.push(e.message) }).subscribe({
      error: () => (ended = 'error'),
      complete: () => (ended = 'complete'),
    });
    try {
      await waitFor(() => ended !== '', 'the stream to end');
      expect(ended).toBe('complete');
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(/permission/i);
    } finally {
      await nc.close();
    }
  });
});
