import { fileColdStore } from '../../../streams/coldStoreFile';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { Subject, lastValueFrom, map, take, toArray } from 'rxjs';
import { IncusStreamItem } from '../../../lib/incus/api';
import { FakeIncus } from '../../helpers/FakeIncus';
import { memoryColdStore } from '../../helpers/memoryColdStore';
import { createEnricher } from '../../../lib/enricher/pipeline/createEnricher';
import { EnricherMetrics } from '../../../lib/enricher/metrics/metrics';
import { tracking } from '../../helpers/marbles';
import { harness, newTs, settings, smallWorld, storeOf, summary } from './harness';

const connected: IncusStreamItem = { kind: 'connected' };

function fleet(fake: FakeIncus): FakeIncus {
  fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
  fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
  return fake;
}

describe('enricher drain', () => {
  it('hands on the whole line in order when drained: answered events enriched, unanswered ones as they arrived, trashed ones not at all', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.latency = (call) => (call.name === 'c1' ? 100 : 1);
      ts.schedule(() => fake.configure('default', 'c2', { 'user.v': '2' }), 0);
      const events = hot('a b d u 996ms |', {
        a: fake.event('instance-updated', 'default', 'c1'),
        b: fake.event('instance-updated', 'default', 'c2'),
        d: fake.event('instance-deleted', 'default', 'c9'),
        u: fake.event('instance-updated', 'default', 'c2'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      ts.schedule(() => enricher.drain(), 50);
      expectObservable(enricher.events$.pipe(map(summary))).toBe('50ms (abd|)', {
        a: 'instance-updated default/c1 +p',
        b: 'instance-updated default/c2 @10.0.0.6 +p',
        d: 'instance-deleted default/c9 +p',
      });
    });
  });

  it('flushes what debounce holds into the line before handing it on', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.latency = 1;
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '2' }), 20);
      const u = fake.event('instance-updated', 'default', 'c1');
      const events = hot<IncusStreamItem>('c 19ms u u 978ms |', { c: connected, u });
      const { enricher } = harness(ts, fake, events, { initial });
      ts.schedule(() => enricher.drain(), 30);
      // The first update leaves at 22; the second, held by debounce, is flushed at the drain and
      // handed on unread.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('22ms a 7ms (b|)', {
        a: 'instance-updated default/c1 @10.0.0.5 +p',
        b: 'instance-updated default/c1 +p',
      });
    });
  });

  it('completes when the event stream completes, and leaves no timer armed once unsubscribed', () => {
    const ts = newTs();
    const { scheduler, armed } = tracking(ts);
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(new FakeIncus({ scheduler, latency: 2 }));
      fake.setNetwork('default', 'br0');
      const events = hot<IncusStreamItem>('c 99ms |', { c: connected });
      const enricher = createEnricher({
        events$: events,
        reader: fake,
        config: settings({ ttl: 60_000 }),
        registry: new Registry(),
        scheduler,
      });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('14ms (ab) 82ms |', {
        a: 'instance-updated default/c1 @10.0.0.5 +p (round)',
        b: 'instance-updated default/c2 @10.0.0.6 +p (round)',
      });
      ts.schedule(() => expect(armed()).toBeGreaterThan(0), 50);
    });
    expect(armed()).toBe(0);
  });

  it('runs once: a second subscription errors', () => {
    const ts = newTs();
    ts.run(({ expectObservable, cold }) => {
      const fake = fleet(smallWorld(ts));
      const enricher = createEnricher({
        events$: cold<IncusStreamItem>('-'),
        reader: fake,
        config: settings(),
        registry: new Registry(),
        scheduler: ts,
      });
      enricher.events$.subscribe();
      expectObservable(enricher.events$).toBe('#', undefined, new Error('an enricher runs once: subscribe to events$ a single time'));
    });
  });
});

describe('enricher cold store in the pipeline', () => {
  it('writes the model every StoreInterval while something changed, never when nothing did, and once more on the way out', async () => {
    const ts = newTs();
    let h: ReturnType<typeof harness> | undefined;
    const savedAt: number[] = [];
    ts.run(({ hot }) => {
      const fake = fleet(smallWorld(ts));
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '2' }), 12_000);
      const events = hot<IncusStreamItem>('c 11999ms u 7999ms |', { c: connected, u: fake.event('instance-updated', 'default', 'c1') });
      h = harness(ts, fake, events);
      const save = h.store.save.bind(h.store);
      h.store.save = (document) => {
        savedAt.push(ts.now());
        return save(document);
      };
      h.enricher.events$.subscribe();
    });
    await h!.enricher.stopped;
    // The first round (to 14) is written at the 5 s tick; the 10 s tick finds nothing new; the
    // update read at 12 s changed the model, written at the 15 s tick; the drain at 20 s finds
    // nothing new.
    expect(savedAt).toEqual([5000, 15_000]);
    const last = h!.store.saved[h!.store.saved.length - 1];
    expect(last.projects.default.instances?.c1.config['user.v']).toBe('2');
    expect(Object.keys(last.projects.default.instances ?? {})).toEqual(['c1', 'c2']);
  });

  it('writes a last time on drain when something changed since the last tick', async () => {
    const ts = newTs();
    let h: ReturnType<typeof harness> | undefined;
    ts.run(({ hot }) => {
      const fake = fleet(smallWorld(ts));
      const events = hot<IncusStreamItem>('c 99ms |', { c: connected });
      h = harness(ts, fake, events);
      h.enricher.events$.subscribe();
    });
    await h!.enricher.stopped;
    expect(h!.store.saved).toHaveLength(1);
    expect(Object.keys(h!.store.saved[0].projects.default.instances ?? {})).toEqual(['c1', 'c2']);
  });

  describe('in a file (E1)', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'rxfleet-enricher-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('a restart starts warm from what the last run stored, says nothing of what did not change, and the first round corrects the rest', async () => {
      const storeFile = join(dir, 'enricher-cold-store.json');
      const run = async (fake: FakeIncus, ts: ReturnType<typeof newTs>): Promise<{ events: string[]; ready: string[] }> => {
        const events: string[] = [];
        const ready: string[] = [];
        let enricher: ReturnType<typeof createEnricher> | undefined;
        ts.run(({ hot }) => {
          enricher = createEnricher({
            events$: hot<IncusStreamItem>('-c 98ms |', { c: connected }),
            reader: fake,
            config: settings({ storeFile }),
            registry: new Registry(),
            scheduler: ts,
            store: (hooks) => fileColdStore(storeFile, hooks),
          });
          enricher.ready$.subscribe((r) => ready.push(`${ts.now()}:${r}`));
          enricher.events$.subscribe((e) => events.push(`${ts.now()} ${summary(e)}`));
        });
        await enricher!.stopped;
        return { events, ready };
      };
      const world = (ts: ReturnType<typeof newTs>): FakeIncus => {
        const fake = fleet(new FakeIncus({ scheduler: ts, latency: 2 }));
        return fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24' } });
      };

      const ts1 = newTs();
      const first = await run(world(ts1), ts1);
      expect(first.events).toEqual([
        '15 instance-updated default/c1 @10.0.0.5 +p (round)',
        '15 instance-updated default/c2 @10.0.0.6 +p (round)',
      ]);
      expect(first.ready).toEqual(['0:false', '9:true', '100:false']);
      expect(statSync(storeFile).mode & 0o777).toBe(0o600);
      expect(existsSync(`${storeFile}.tmp`)).toBe(false);

      const ts2 = newTs();
      const changed = world(ts2).configure('default', 'c2', { 'user.v': 'changed while we were away' });
      const second = await run(changed, ts2);
      // Ready the moment it connects; c1 is as it was (silent); c2 changed.
      expect(second.ready).toEqual(['0:false', '1:true', '100:false']);
      expect(second.events).toEqual(['15 instance-updated default/c2 @10.0.0.6 +p (round)']);
      const stored = JSON.parse(readFileSync(storeFile, 'utf8')) as {
        projects: { default: { instances: Record<string, { config: Record<string, string> }> } };
      };
      expect(stored.projects.default.instances.c2.config['user.v']).toBe('changed while we were away');
    });
  });
});

describe('enricher metrics', () => {
  it('registers every series at zero on the registry it is given, in a format promtool accepts', async () => {
    const registry = new Registry();
    new EnricherMetrics(registry);
    const text = await registry.metrics();
    for (const line of [
      'enricher_projects 0',
      'enricher_instances 0',
      'enricher_sweeps_total{result="success"} 0',
      'enricher_sweeps_total{result="failed"} 0',
      'enricher_reads_total{kind="instance",result="ok"} 0',
      'enricher_reads_total{kind="listing",result="timeout"} 0',
      'enricher_events_received_total 0',
      'enricher_events_malformed_total 0',
      'enricher_events_dropped_total{reason="debounce"} 0',
      'enricher_events_emitted_total{status="failed"} 0',
      'enricher_store_writes_total{result="failed"} 0',
      'enricher_store_stale 0',
      'enricher_store_last_success_timestamp_seconds 0',
    ]) {
      expect(text).toContain(line);
    }
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect({ status: check.status, problems: `${check.stdout}${check.stderr}`.trim() }).toEqual({ status: 0, problems: '' });
  });

  it('counts reads by kind and result, and events emitted by status, as the pipeline runs', async () => {
    const ts = newTs();
    let h: ReturnType<typeof harness> | undefined;
    ts.run(({ hot }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.failWhen = (call) => (call.name === 'c2' && call.method === 'getInstance' ? new Error('boom') : undefined);
      const events = hot<IncusStreamItem>('a b 98ms |', {
        a: fake.event('instance-updated', 'default', 'c1'),
        b: fake.event('instance-updated', 'default', 'c2'),
      });
      h = harness(ts, fake, events, { initial });
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '3' }), 0);
      h.enricher.events$.subscribe();
    });
    const text = await h!.registry.metrics();
    expect(text).toContain('enricher_reads_total{kind="instance",result="ok"} 1');
    expect(text).toContain('enricher_reads_total{kind="instance",result="error"} 1');
    expect(text).toContain('enricher_reads_total{kind="instance_state",result="ok"} 1');
    expect(text).toContain('enricher_events_emitted_total{status="ok"} 1');
    expect(text).toContain('enricher_events_emitted_total{status="failed"} 1');
    expect(text).toContain('enricher_events_received_total 2');
    expect(text).toContain('enricher_instances 2');
  });
});

describe('enricher with a promise-based reader', () => {
  it('reads through AbortSignals in real time and aborts a superseded read', async () => {
    const fake = fleet(new FakeIncus({ latency: 20 }));
    fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24' } });
    const initial = storeOf(fake);
    fake.latency = 20;
    fake.createInstance('default', 'n1', { network: 'br0' });
    fake.configure('default', 'c1', { 'user.v': '9' });
    const events = new Subject<IncusStreamItem>();
    const enricher = createEnricher({
      events$: events,
      reader: fake.asPromiseReader(),
      config: settings(),
      registry: new Registry(),
      store: memoryColdStore(initial).open,
    });
    const out = lastValueFrom(enricher.events$.pipe(take(2), toArray()));
    events.next(fake.event('instance-updated', 'default', 'c1'));
    events.next(fake.event('instance-updated', 'default', 'n1'));
    fake.start('default', 'n1', '10.0.0.30');
    events.next(fake.event('instance-started', 'default', 'n1'));
    const got = (await out).map(summary);
    expect(got).toEqual(['instance-updated default/c1 @10.0.0.5 +p', 'instance-updated default/n1 @10.0.0.30 +p']);
    // n1's plain read was aborted by the start's, so n1 was read twice, not three times.
    expect(fake.count('getInstance')).toBe(3);
    enricher.drain();
    await enricher.stopped;
  });
});
