import fc from 'fast-check';
import { InvalidLifecycleComponentError, ProtocolError } from '../../../lib/choria/errors';
import {
  lifecycleEventJson,
  lifecycleSubject,
  newLifecycleEvent,
  parseLifecycleEvent,
  validateLifecycleComponent,
} from '../../../lib/choria/lifecycle';

// As the reference shows them (§8.5, §8.6), and as go-choria's testdata has a CloudEvent.
const legacyStartup =
  '{"protocol":"io.choria.lifecycle.v1.startup","id":"01e72410-d734-4611-9485-8c6a2dd2579b","identity":"n1.example.net","component":"provision_mode_server","timestamp":1535106973,"version":"0.29.4"}';
const cloudEventShutdown = `{
    "id": "01e72410-d734-4611-9485-8c6a2dd2579b",
    "source": "io.choria.lifecycle",
    "specversion": "1.0",
    "subject": "ginkgo.example.net",
    "time": "2018-08-24T10:36:13Z",
    "type": "io.choria.lifecycle.v1.shutdown",
    "data": {
        "protocol": "io.choria.lifecycle.v1.shutdown",
        "id": "01e72410-d734-4611-9485-8c6a2dd2579b",
        "identity": "ginkgo.example.net",
        "component": "ginkgo",
        "timestamp": 1535106973,
        "version": "1.2.3"
    }
}`;

describe('lifecycle events', () => {
  it('parses the legacy Choria format', () => {
    expect(parseLifecycleEvent(legacyStartup)).toEqual({
      ok: true,
      value: {
        type: 'startup',
        format: 'choria',
        protocol: 'io.choria.lifecycle.v1.startup',
        id: '01e72410-d734-4611-9485-8c6a2dd2579b',
        identity: 'n1.example.net',
        component: 'provision_mode_server',
        timestamp: 1535106973,
        version: '0.29.4',
      },
    });
  });

  it('parses a CloudEvent by its data, from bytes too', () => {
    const parsed = parseLifecycleEvent(Buffer.from(cloudEventShutdown));
    expect(parsed).toEqual({
      ok: true,
      value: {
        type: 'shutdown',
        format: 'cloudevents',
        protocol: 'io.choria.lifecycle.v1.shutdown',
        id: '01e72410-d734-4611-9485-8c6a2dd2579b',
        identity: 'ginkgo.example.net',
        component: 'ginkgo',
        timestamp: 1535106973,
        version: '1.2.3',
      },
    });
  });

  it('accepts the old colon protocol strings and normalises them', () => {
    const parsed = parseLifecycleEvent(legacyStartup.replace('io.choria.lifecycle.v1.startup', 'choria:lifecycle:startup:1'));
    expect(parsed.ok && [parsed.value.type, parsed.value.protocol]).toEqual(['startup', 'io.choria.lifecycle.v1.startup']);
  });

  it('round-trips every type in both formats, upgraded with both versions', () => {
    for (const type of ['startup', 'shutdown', 'provisioned', 'alive', 'upgraded'] as const) {
      const event = newLifecycleEvent(type, {
        identity: 'n1',
        component: 'provision_mode_server',
        version: '1.0.0',
        ...(type === 'upgraded' ? { newVersion: '1.1.0' } : {}),
      });
      for (const format of ['choria', 'cloudevents'] as const) {
        expect(parseLifecycleEvent(lifecycleEventJson(event, format))).toEqual({ ok: true, value: { ...event, format } });
      }
    }
  });

  it('writes a CloudEvent as go-choria does: source, type, subject, RFC 3339 time, JSON data', () => {
    const event = newLifecycleEvent('startup', {
      identity: 'n1',
      component: 'provision_mode_server',
      version: '0.29.4',
      id: 'abc',
      timestamp: 1535106973,
    });
    expect(JSON.parse(lifecycleEventJson(event, 'cloudevents'))).toEqual({
      specversion: '1.0',
      id: 'abc',
      source: 'io.choria.lifecycle',
      type: 'io.choria.lifecycle.v1.startup',
      subject: 'n1',
      time: '2018-08-24T10:36:13Z',
      datacontenttype: 'application/json',
      data: {
        protocol: 'io.choria.lifecycle.v1.startup',
        id: 'abc',
        identity: 'n1',
        component: 'provision_mode_server',
        timestamp: 1535106973,
        version: '0.29.4',
      },
    });
    expect(JSON.parse(lifecycleEventJson(event, 'choria'))).toEqual({
      protocol: 'io.choria.lifecycle.v1.startup',
      id: 'abc',
      identity: 'n1',
      component: 'provision_mode_server',
      timestamp: 1535106973,
      version: '0.29.4',
    });
  });

  it('refuses unknown formats, unknown types, missing identities and CloudEvents from another source', () => {
    const reasons = [
      '{"hello":"world"}',
      legacyStartup.replace('v1.startup', 'v1.exploded'),
      legacyStartup.replace('"identity":"n1.example.net",', ''),
      cloudEventShutdown.replace('"source": "io.choria.lifecycle"', '"source": "elsewhere"'),
      cloudEventShutdown.replace(/"data": \{[^}]*\}/, '"data": "text"'),
      'not json',
    ].map((text) => {
      const parsed = parseLifecycleEvent(text);
      return parsed.ok ? 'accepted' : parsed.error.reason;
    });
    expect(reasons).toEqual(['protocol', 'protocol', 'schema', 'protocol', 'schema', 'not_json']);
    expect(parseLifecycleEvent(legacyStartup, { maxBytes: 10 })).toMatchObject({ ok: false, error: { reason: 'oversized' } });
  });

  it('never throws on arbitrary JSON', () => {
    fc.assert(
      fc.property(fc.oneof(fc.json(), fc.string()), (text) => {
        const parsed = parseLifecycleEvent(text);
        if (!parsed.ok) expect(parsed.error).toBeInstanceOf(ProtocolError);
      }),
      { numRuns: 500 },
    );
  });

  it('builds subjects and refuses a component with `.`, `>`, `*` or nothing in it', () => {
    expect(lifecycleSubject('startup', 'provision_mode_server')).toBe('choria.lifecycle.event.startup.provision_mode_server');
    expect(lifecycleSubject('*', 'server')).toBe('choria.lifecycle.event.*.server');
    for (const bad of ['a.b', '>', 'prov*', '', 'two words'])
      expect(() => validateLifecycleComponent(bad)).toThrow(InvalidLifecycleComponentError);
    expect(() => lifecycleSubject('startup', 'x.>')).toThrow('invalid lifecycle component: x.>');
  });
});
