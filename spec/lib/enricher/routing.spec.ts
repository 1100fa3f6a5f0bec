import { Registry } from 'prom-client';
import { map } from 'rxjs';
import { IncusStreamItem } from '../../../lib/incus/api';
import { FakeIncus } from '../../helpers/FakeIncus';
import { EnrichedEvent } from '../../../lib/enricher/model/event';
import { daemonWanted } from '../../../lib/enricher/model/wanted';
import { harness, metric, newTs, smallWorld, storeOf, summary, warmStore } from './harness';

// Every call of the fake takes 2 ms unless a test says otherwise: an instance read (instance,
// then state) lands 4 ms after it is asked for, a network or project read 2 ms after.

/** br0 (10.0.0.1/24) with c1 and c2 running on it, c3 on br1 (10.1.0.1/24). */
function fleet(fake: FakeIncus): FakeIncus {
  fake.setNetwork('default', 'br1', { config: { 'ipv4.address': '10.1.0.1/24' } });
  fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
  fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
  fake.createInstance('default', 'c3', { network: 'br1' }).start('default', 'c3', '10.1.0.7');
  return fake;
}

describe('enricher routing', () => {
  it('reads an instance event and sends it on with its interfaces and its project configuration', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const events = hot('a 99ms |', { a: fake.event('instance-updated', 'default', 'c1') });
      const { enricher } = harness(ts, fake, events, { initial: warmStore() });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('4ms x 95ms |', { x: 'instance-updated default/c1 @10.0.0.5 +p' });
    });
  });

  it('sends nothing for an event that says nothing new, including a lease renewal that writes only volatile keys', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      ts.schedule(() => fake.configure('default', 'c1', { 'user.role': 'web' }), 100);
      ts.schedule(() => fake.lease('default', 'c1', '10.0.0.5'), 200);
      const update = fake.event('instance-updated', 'default', 'c1');
      const events = hot('u 99ms u 99ms u 99ms |', { u: update });
      const h = harness(ts, fake, events, { initial });
      registry = h.registry;
      // t=0: what the store already said; t=100: a real change; t=200: volatile only.
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('104ms x 195ms |', { x: 'instance-updated default/c1 @10.0.0.5 +p' });
    });
    expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'unchanged' })).toBe(2);
  });

  it('keeps the action in what counts as new: a stop right after an update is its own event', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      ts.schedule(() => fake.stop('default', 'c1'), 0);
      const events = hot('u 9ms s 89ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        s: fake.event('instance-stopped', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      // Both see the same stopped instance; only the action differs.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('4ms u 9ms s 85ms |', {
        u: 'instance-updated default/c1 @- +p',
        s: 'instance-stopped default/c1 @- +p',
      });
    });
  });

  it('attaches the network to a network event (E8) and re-reads every instance on that wire, and only those', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      ts.schedule(() => {
        fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.9.1/24' } });
        fake.lease('default', 'c1', '10.0.9.5');
        fake.lease('default', 'c2', '10.0.9.6');
      }, 0);
      const events = hot('n 99ms |', { n: fake.event('network-updated', 'default', 'br0') });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('2ms n 3ms (ab) 90ms |', {
        n: 'network-updated default/br0 {10.0.9.1/24}',
        a: 'instance-updated default/c1 @10.0.9.5 +p (fan-out)',
        b: 'instance-updated default/c2 @10.0.9.6 +p (fan-out)',
      });
      ts.schedule(() => {
        expect(fake.count('getInstance')).toBe(2);
        expect(fake.count('getNetwork')).toBe(1);
      }, 50);
    });
  });

  it('sends a network event as it arrived, after its read, when nobody wants the network attached', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      const wanted = daemonWanted([{ action: 'network-updated', enrich: 0, debounce: true }]);
      const events = hot('n 99ms |', { n: fake.event('network-updated', 'default', 'br1') });
      const { enricher } = harness(ts, fake, events, { initial, wanted });
      // Settled on arrival; the read still patches the wire (nothing changed, so no fan-out event).
      expectObservable(enricher.events$.pipe(map(summary))).toBe('n 99ms |', { n: 'network-updated default/br1' });
      ts.schedule(() => expect(fake.count('getNetwork')).toBe(1), 50);
    });
  });

  it('fans a profile update out to the instances using that profile, and a profile delete to nobody', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.setProfile('default', 'web', { config: { 'user.tier': 'a' } });
      fake.setProfiles('default', 'c1', ['default', 'web']);
      const initial = storeOf(fake);
      ts.schedule(() => fake.setProfile('default', 'web', { config: { 'user.tier': 'b' } }), 0);
      const events = hot('p 9ms d 89ms |', {
        p: fake.event('profile-updated', 'default', 'web'),
        d: fake.event('profile-deleted', 'default', 'old'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('p 3ms a 5ms d 89ms |', {
        p: 'profile-updated default/web',
        a: 'instance-updated default/c1 @10.0.0.5 +p (fan-out)',
        d: 'profile-deleted default/old',
      });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(1), 50);
    });
  });

  it('leaves an event of a project not read yet unenriched by it, reads the project, and parks the instance read until it lands', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.setProject('p2', { 'user.label': 'blue' });
      fake.createInstance('p2', 'w1', { network: 'br0' }).start('p2', 'w1', '10.0.0.20');
      const events = hot('s 99ms |', { s: fake.event('instance-started', 'p2', 'w1') });
      const { enricher } = harness(ts, fake, events, { initial: warmStore() });
      // The project read lands at 2, then the instance read is issued: 2 + 4.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('6ms s 93ms |', { s: 'instance-started p2/w1 @10.0.0.20 +p' });
      ts.schedule(() => expect(enricher.status().projects).toBe(2), 50);
    });
  });

  it('sends an event unenriched by its project when the project cannot be read, rather than enriched with nothing', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.setProject('p2', {});
      fake.createInstance('p2', 'w1', { network: 'br0' }).start('p2', 'w1', '10.0.0.20');
      fake.failWhen = (call) => (call.method === 'getProject' ? new Error('forbidden') : undefined);
      const events = hot('s 99ms |', { s: fake.event('instance-updated', 'p2', 'w1') });
      const { enricher } = harness(ts, fake, events, { initial: warmStore() });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('6ms s 93ms |', { s: 'instance-updated p2/w1 @10.0.0.20' });
    });
  });

  it('passes an action wanted with no enrichment through without a read, in its place', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const wanted = daemonWanted([{ action: 'instance-paused', enrich: 0, debounce: false }]);
      const events = hot('z 99ms |', { z: fake.event('instance-paused', 'default', 'c1') });
      const { enricher } = harness(ts, fake, events, { initial: warmStore(), wanted });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('z 99ms |', { z: 'instance-paused default/c1' });
      ts.schedule(() => expect(fake.count()).toBe(0), 50);
    });
  });

  it('drops an action nobody wants at the door and counts it', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const events = hot('e 99ms |', { e: fake.event('instance-log-retrieved', 'default', 'c1') });
      const h = harness(ts, fake, events, { initial: warmStore() });
      registry = h.registry;
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('100ms |');
    });
    expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'unwanted' })).toBe(1);
    expect(await metric(registry!, 'enricher_events_received_total')).toBe(1);
  });

  it('counts a malformed item and an event without a name, and carries on', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const nameless = fake.event('instance-updated', 'default', '');
      const malformed: IncusStreamItem = { kind: 'malformed', reason: 'not JSON' };
      const events = hot<IncusStreamItem>('m n u 97ms |', {
        m: malformed,
        n: nameless,
        u: fake.event('instance-updated', 'default', 'c1'),
      });
      const h = harness(ts, fake, events, { initial: warmStore() });
      registry = h.registry;
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('6ms u 93ms |', { u: 'instance-updated default/c1 @10.0.0.5 +p' });
    });
    expect(await metric(registry!, 'enricher_events_malformed_total')).toBe(2);
  });

  describe('projects served (E6)', () => {
    it('with a list, drops an event of an unlisted project before any read', async () => {
      const ts = newTs();
      let registry: Registry | undefined;
      ts.run(({ hot, expectObservable }) => {
        const fake = fleet(smallWorld(ts));
        fake.setProject('p2', {});
        fake.createInstance('p2', 'w1', { network: 'br0' }).start('p2', 'w1', '10.0.0.20');
        const events = hot('a b 98ms |', {
          a: fake.event('instance-started', 'p2', 'w1'),
          b: fake.event('instance-updated', 'default', 'c1'),
        });
        const h = harness(ts, fake, events, { initial: warmStore(), config: { projects: { mode: 'list', names: ['default'] } } });
        registry = h.registry;
        expectObservable(h.enricher.events$.pipe(map(summary))).toBe('5ms b 94ms |', { b: 'instance-updated default/c1 @10.0.0.5 +p' });
        ts.schedule(() => expect(fake.count('getProject')).toBe(0), 50);
      });
      expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'unserved' })).toBe(1);
    });

    it('with a marker, reads an unknown project, and once it is known not to be served drops its events before any read', async () => {
      const ts = newTs();
      let registry: Registry | undefined;
      ts.run(({ hot, expectObservable }) => {
        const fake = fleet(smallWorld(ts));
        fake.setProject('default', { 'user.enrich': 'yes' });
        const initial = storeOf(fake);
        fake.setProject('p2', {});
        fake.createInstance('p2', 'w1', { network: 'br0' }).start('p2', 'w1', '10.0.0.20');
        ts.schedule(() => fake.configure('default', 'c1', { 'user.x': '1' }), 0);
        const w1 = fake.event('instance-updated', 'p2', 'w1');
        const events = hot('a 9ms a 9ms c 79ms |', { a: w1, c: fake.event('instance-updated', 'default', 'c1') });
        const h = harness(ts, fake, events, { initial, config: { projects: { mode: 'marker', key: 'user.enrich', values: 'true' } } });
        registry = h.registry;
        // The first w1 waits for its project's read, which says "not served": it is dropped
        // unread; the second is dropped on arrival.
        expectObservable(h.enricher.events$.pipe(map(summary))).toBe('24ms c 75ms |', { c: 'instance-updated default/c1 @10.0.0.5 +p' });
        ts.schedule(() => {
          expect(fake.count('getProject')).toBe(1);
          expect(fake.count('getInstance')).toBe(1);
          expect(h.enricher.status().instances).toBe(3);
        }, 50);
      });
      expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'unserved' })).toBe(2);
    });

    it('a project that stops being served takes its instances out, each as an instance-deleted (E4)', () => {
      const ts = newTs();
      ts.run(({ hot, expectObservable }) => {
        const fake = fleet(smallWorld(ts));
        fake.setProject('default', { 'user.enrich': 'true' });
        fake.setProject('p2', { 'user.enrich': 'true' });
        fake.createInstance('p2', 'w1', { network: 'br0' }).start('p2', 'w1', '10.0.0.20');
        fake.createInstance('p2', 'w2', { network: 'br0' });
        const initial = storeOf(fake);
        ts.schedule(() => fake.setProject('p2', {}), 0);
        const events = hot('u 99ms |', { u: fake.event('project-updated', 'p2', 'p2') });
        const { enricher } = harness(ts, fake, events, {
          initial,
          config: { projects: { mode: 'marker', key: 'user.enrich', values: 'true' } },
        });
        expectObservable(enricher.events$.pipe(map(summary))).toBe('u 1ms (ab) 94ms |', {
          u: 'project-updated p2/p2',
          a: 'instance-deleted p2/w1 +p (prune)',
          b: 'instance-deleted p2/w2 +p (prune)',
        });
      });
    });
  });

  it('keeps at most Workers reads in flight against the server; the rest wait their turn in arrival order', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts, 10);
      const names = Array.from({ length: 7 }, (_, i) => `c${i}`);
      for (const [i, name] of names.entries())
        fake.createInstance('default', name, { network: 'br0' }).start('default', name, `10.0.0.${i + 10}`);
      const values = Object.fromEntries(
        names.map((name, i) => [String.fromCharCode(97 + i), fake.event('instance-updated', 'default', name)]),
      );
      const events = hot('(abcdefg) 991ms |', values);
      const { enricher } = harness(ts, fake, events, { initial: warmStore(), config: { workers: 3 } });
      // Three reads at a time, 20 ms each: 3 land at 20, 3 at 40, the last at 60; each leaves
      // once everything ahead of it has.
      expectObservable(enricher.events$.pipe(map((e) => e.name))).toBe('20ms (abc) 15ms (def) 15ms g 939ms |', {
        a: 'c0',
        b: 'c1',
        c: 'c2',
        d: 'c3',
        e: 'c4',
        f: 'c5',
        g: 'c6',
      });
      ts.schedule(() => expect(fake.maxInFlight).toBe(3), 100);
    });
  });

  it('fails the event of a read the server does not answer within the read timeout, and moves the line on', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.latency = (call) => (call.name === 'c1' ? 60_000 : 2);
      const events = hot('a b 99998ms |', {
        a: fake.event('instance-updated', 'default', 'c1'),
        b: fake.event('instance-updated', 'default', 'c2'),
      });
      const { enricher } = harness(ts, fake, events, { initial: warmStore(), config: { readTimeout: 10_000 } });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('10000ms (ab) 89996ms |', {
        a: 'instance-updated default/c1 [failed] +p',
        b: 'instance-updated default/c2 @10.0.0.6 +p',
      });
    });
  });

  it('a deleted network re-reads the instances that were on it', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      ts.schedule(() => {
        fake.deleteInstance('default', 'c3');
        fake.deleteNetwork('default', 'br1');
      }, 0);
      const events = hot('n 99ms |', { n: fake.event('network-deleted', 'default', 'br1') });
      const { enricher } = harness(ts, fake, events, { initial });
      // c3 (gone too) answers 404: nothing is sent for it but the network event.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('n 99ms |', { n: 'network-deleted default/br1' });
      ts.schedule(() => {
        expect(fake.count('getInstance')).toBe(1);
        expect(enricher.status().networks).toBe(1);
      }, 50);
    });
  });

  it('a project update re-reads the project and, when its labels changed, each of its instances says so again', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.setProject('p2', { 'user.team': 'blue' });
      fake.createInstance('p2', 'w1', { network: 'br0' }).start('p2', 'w1', '10.0.0.20');
      const initial = storeOf(fake);
      ts.schedule(() => fake.setProject('p2', { 'user.team': 'red' }), 0);
      const events = hot('u 9ms u 89ms |', { u: fake.event('project-updated', 'p2', 'p2') });
      const labels = map((e: EnrichedEvent) => `${summary(e)} ${e.projectConfig?.['user.team'] ?? ''}`);
      const { enricher } = harness(ts, fake, events, { initial });
      // The second update finds the labels as they were: nothing to say again.
      expectObservable(enricher.events$.pipe(labels)).toBe('u 5ms w 3ms u 89ms |', {
        u: 'project-updated p2/p2 ',
        w: 'instance-updated p2/w1 @10.0.0.20 +p (fan-out) red',
      });
    });
  });
});
