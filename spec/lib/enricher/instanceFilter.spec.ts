import { Registry } from 'prom-client';
import { map } from 'rxjs';
import { IncusStreamItem } from '../../../lib/incus/api';
import { parseEnricherConfig } from '../../../lib/enricher/config/config';
import { harness, metric, newTs, smallWorld, storeOf, summary } from './harness';

// Serving a subset of the instances (the original's `Instance` predicate): served instances are
// held and emitted, unserved ones are neither; one that stops being served leaves once, with
// nothing attached, and is forgotten.

const connected: IncusStreamItem = { kind: 'connected' };
const servingOnly = (instances: string | string[]) => parseEnricherConfig({ instances }).settings;

describe('enricher instance filter', () => {
  it('by label: emits and holds the instances whose configuration carries it; one that loses it leaves once, bare, and is forgotten', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.createInstance('default', 'c1', { network: 'br0', config: { 'user.rxfleet': '1' } }).start('default', 'c1', '10.0.0.5');
      fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
      ts.schedule(() => fake.configure('default', 'c1', { 'user.rxfleet': undefined }), 300);
      const u1 = fake.event('instance-updated', 'default', 'c1');
      const events = hot<IncusStreamItem>('c 19ms a b 278ms u 299ms u 399ms |', {
        c: connected,
        a: u1,
        b: fake.event('instance-updated', 'default', 'c2'),
        u: u1,
      });
      const h = harness(ts, fake, events, { config: servingOnly('user.rxfleet=1') });
      registry = h.registry;
      // The round announces c1 only; c2's update is read and dropped; c1 without its label (300,
      // its instance read and no state) leaves once with nothing attached; its next update is dropped.
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('14ms r 287ms x 697ms |', {
        r: 'instance-updated default/c1 @10.0.0.5 +p (round)',
        x: 'instance-updated default/c1 +p',
      });
      ts.schedule(() => expect(h.enricher.status().instances).toBe(1), 30);
      ts.schedule(() => expect(h.enricher.status().instances).toBe(0), 700);
    });
    // c2's update and c1's last: events from Incus that went nowhere (the round's names are the enricher's own).
    expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'unserved' })).toBe(2);
  });

  it('by name: drops the events of other names before any read, and a round reads only the names served', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.createInstance('default', 'web-1', { network: 'br0' }).start('default', 'web-1', '10.0.0.5');
      fake.createInstance('default', 'db-1', { network: 'br0' }).start('default', 'db-1', '10.0.0.6');
      const events = hot<IncusStreamItem>('c 19ms a 79ms |', { c: connected, a: fake.event('instance-started', 'default', 'db-1') });
      const { enricher } = harness(ts, fake, events, { config: servingOnly('web-*') });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('14ms r 85ms |', {
        r: 'instance-updated default/web-1 @10.0.0.5 +p (round)',
      });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(1), 90);
    });
  });

  it('a rename out of the names served leaves once, bare, under its new name; a rename into them is read as usual', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.createInstance('default', 'web-1', { network: 'br0' }).start('default', 'web-1', '10.0.0.5');
      fake.createInstance('default', 'db-2', { network: 'br0' }).start('default', 'db-2', '10.0.0.6');
      const initial = storeOf(fake);
      ts.schedule(() => fake.renameInstance('default', 'web-1', 'db-1'), 10);
      ts.schedule(() => fake.renameInstance('default', 'db-2', 'web-2'), 20);
      const events = hot('10ms a 9ms b 79ms |', {
        a: fake.event('instance-renamed', 'default', 'db-1', 'web-1'),
        b: fake.event('instance-renamed', 'default', 'web-2', 'db-2'),
      });
      const { enricher } = harness(ts, fake, events, { initial, config: servingOnly(['web-*']) });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('10ms a 13ms b 75ms |', {
        a: 'instance-renamed default/db-1<web-1 +p',
        b: 'instance-renamed default/web-2<db-2 @10.0.0.6 +p',
      });
      ts.schedule(() => expect(enricher.status().instances).toBe(1), 90);
    });
  });

  it('reads the filter from the configuration: a label, a name pattern, or a list of either; refuses an empty one', () => {
    expect(parseEnricherConfig({}).settings.instances).toEqual({ mode: 'all' });
    expect(parseEnricherConfig({ instances: 'user.rxfleet=1' }).settings.instances).toEqual({
      mode: 'match',
      selectors: [{ kind: 'label', key: 'user.rxfleet', values: ['1'] }],
    });
    expect(parseEnricherConfig({ instances: ['web-*', 'user.role=db,cache'] }).settings.instances).toEqual({
      mode: 'match',
      selectors: [
        { kind: 'name', pattern: 'web-*' },
        { kind: 'label', key: 'user.role', values: ['db', 'cache'] },
      ],
    });
    expect(() => parseEnricherConfig({ instances: ['=x'] })).toThrow(/instances/);
  });
});
