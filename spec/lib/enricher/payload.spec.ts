import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { IncusApiError, IncusStreamItem } from '../../../lib/incus/api';
import { EnrichedEvent } from '../../../lib/enricher/model/event';
import { EVENT_PAYLOAD_SCHEMA, EventPayload, toPayload } from '../../../lib/enricher/output/payload';
import { decodeEventPayload } from '../../../lib/enricher/output/payloadDecoder';
import { subjectFor, subjectToken } from '../../../lib/enricher/output/subject';
import { harness, newTs, smallWorld, storeOf } from './harness';

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats(ajv);
const validate = ajv.compile<EventPayload>(EVENT_PAYLOAD_SCHEMA);
const problems = (payload: unknown): string[] =>
  validate(payload) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);

/** Every kind of event the enricher sends, from one run over a fake fleet. */
function sample(): EnrichedEvent[] {
  const ts = newTs();
  const out: EnrichedEvent[] = [];
  ts.run(({ hot }) => {
    const fake = smallWorld(ts);
    fake.setNetwork('default', 'br0.100', { config: { 'ipv4.address': '10.1.0.1/24', 'ipv6.address': 'fd00::1/64' } });
    fake.setProject('p2', { 'user.team': 'blue' });
    fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
    fake.createInstance('p2', 'w1', { network: 'br0.100' }).start('p2', 'w1', '10.1.0.9');
    fake.createInstance('default', 'gone', { network: 'br0' });
    const initial = storeOf(fake);
    fake.deleteInstance('default', 'gone');
    fake.renameInstance('p2', 'w1', 'w2');
    fake.createInstance('default', 'bad', { network: 'br0' });
    fake.failWhen = (call) => (call.name === 'bad' && call.method === 'getInstance' ? new IncusApiError('boom', 500) : undefined);
    const events = hot<IncusStreamItem>('c a b n p f 100ms |', {
      c: { kind: 'connected' },
      a: fake.event('instance-started', 'default', 'c1'),
      b: fake.event('instance-renamed', 'p2', 'w2', 'w1'),
      n: fake.event('network-updated', 'default', 'br0.100'),
      p: fake.event('profile-updated', 'default', 'default'),
      f: fake.event('instance-updated', 'default', 'bad'),
    });
    const { enricher } = harness(ts, fake, events, { initial });
    enricher.events$.subscribe((e) => out.push(e));
  });
  return out;
}

describe('the published payload', () => {
  const events = sample();

  it('covers every shape: instance with interfaces, rename, network (E8), profile, failed, pruned delete', () => {
    const seen = new Set(events.map((e) => `${e.action}:${e.status}:${e.origin}`));
    for (const shape of [
      'instance-started:ok:incus',
      'instance-renamed:ok:incus',
      'network-updated:ok:incus',
      'profile-updated:ok:incus',
      'instance-updated:failed:incus',
      'instance-deleted:ok:prune',
    ]) {
      expect(seen).toContain(shape);
    }
  });

  it('every event the enricher sends matches the JSON Schema', () => {
    for (const event of events)
      expect({ action: event.action, problems: problems(toPayload(event)) }).toEqual({ action: event.action, problems: [] });
  });

  it('says what it carries: old names, failure reason, attached records, enrichment names', () => {
    const payloads = events.map(toPayload);
    const renamed = payloads.find((p) => p.action === 'instance-renamed');
    expect(renamed).toMatchObject({
      project: 'p2',
      name: 'w2',
      old_name: 'w1',
      project_config: { 'user.team': 'blue' },
      enriched: ['instance', 'interfaces', 'project'],
    });
    expect(renamed?.instance?.interfaces).toEqual([
      { name: 'eth0', device: 'eth0', project: 'default', network: 'br0.100', managed: true, ipv4: ['10.1.0.9'], ipv6: [] },
    ]);
    expect(payloads.find((p) => p.status === 'failed')).toMatchObject({ error: 'enricher/read', enriched: ['project'] });
    expect(payloads.find((p) => p.action === 'network-updated')).toMatchObject({
      network: { name: 'br0.100', ipv4: '10.1.0.1/24', ipv6: 'fd00::1/64' },
      enriched: ['network'],
    });
    const started = payloads.find((p) => p.action === 'instance-started');
    expect(started?.timestamp).toMatch(/^1970-01-01T00:00:00/);
    expect(started?.instance?.config).not.toHaveProperty('volatile.base_image');
  });

  it('the schema refuses what a consumer must never get', () => {
    const good = toPayload(events.find((e) => e.action === 'instance-started') as EnrichedEvent);
    expect(problems(good)).toEqual([]);
    const { instance: _dropped, ...withoutInstance } = good;
    expect(problems(withoutInstance)).not.toEqual([]);
    expect(problems({ ...good, status: 'failed', error: 'enricher/read' })).not.toEqual([]);
    expect(problems({ ...good, extra: 1 })).not.toEqual([]);
    expect(
      problems({ ...good, instance: { ...good.instance, interfaces: [{ ...good.instance!.interfaces[0], ipv4: ['not an ip'] }] } }),
    ).not.toEqual([]);
  });

  it('a dropped event has no payload', () => {
    const dropped = { ...events[0], status: 'dropped' as const, reason: 'debounce' };
    expect(() => toPayload(dropped)).toThrow(/dropped event/);
  });
});

describe('decodeEventPayload (a consumer reading the payload back)', () => {
  const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

  it('gives back exactly what toPayload made, for every kind of event', () => {
    for (const event of sample()) {
      const payload = toPayload(event);
      expect(decodeEventPayload(bytes(JSON.stringify(payload)))).toEqual({ ok: true, value: payload });
    }
  });

  it('refuses what is not a version-1 enriched event, saying why without quoting it', () => {
    const payload = toPayload(sample()[0]);
    const reason = (data: Uint8Array, max?: number): string => {
      const decoded = decodeEventPayload(data, max);
      return decoded.ok ? 'accepted' : decoded.reason;
    };
    expect(reason(bytes('{"secret": "s3cret"'))).toBe('not UTF-8 JSON');
    expect(reason(new Uint8Array([0x7b, 0xff, 0x7d]))).toBe('not UTF-8 JSON');
    expect(reason(bytes(JSON.stringify({ ...payload, version: 2 })))).toBe(
      'not an enriched event (version 1): /version must be equal to constant',
    );
    expect(reason(bytes(JSON.stringify({ ...payload, kind: 'user.secret=s3cret' })))).not.toContain('s3cret');
    expect(reason(bytes(JSON.stringify(payload)), 10)).toMatch(/^\d+ bytes, more than 10$/);
  });
});

describe('the NATS subject', () => {
  it('is <prefix>.<project>.<kind>.<action>.<name>', () => {
    expect(subjectFor('incus.events', { project: 'p2', kind: 'instance', action: 'instance-started', name: 'web1' })).toBe(
      'incus.events.p2.instance.instance-started.web1',
    );
  });

  it('escapes what would split a token or make it a wildcard, reversibly', () => {
    for (const name of ['br0.100', 'a*b', 'a>b', 'a b', '50%', '']) {
      const token = subjectToken(name);
      expect(token).toMatch(/^[^.*>\s]+$/);
      if (name !== '') expect(decodeURIComponent(token)).toBe(name);
    }
    expect(
      subjectFor('incus.events', { project: 'default', kind: 'network', action: 'network-updated', name: 'br0.100' }).split('.'),
    ).toHaveLength(6);
  });
});
