import pino from 'pino';
import { Registry } from 'prom-client';
import { map } from 'rxjs';
import { IncusApiError, IncusStreamItem } from '../../../lib/incus/api';
import { FakeIncus } from '../../helpers/FakeIncus';
import { harness, metric, newTs, smallWorld, storeOf, summary } from './harness';

const connected: IncusStreamItem = { kind: 'connected' };
const disconnected: IncusStreamItem = { kind: 'disconnected', reason: 'socket closed' };

function fleet(fake: FakeIncus): FakeIncus {
  fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
  fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
  return fake;
}

// With 2 ms calls, the first round (fast) goes: project listing 0-2, project read 2-4, network
// listing 4-6, network read 6-8 (warm), instance listing 8-10, instance reads 10-14; it ends at
// 10, when its last name has been handed on.

describe('enricher rounds', () => {
  it("holds instance reads while cold and releases them in arrival order when the first round's networks land; ready = connected and warm", () => {
    const ts = newTs();
    const ready: string[] = [];
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const events = hot<IncusStreamItem>('c s 98ms |', { c: connected, s: fake.event('instance-started', 'default', 'c2') });
      const { enricher } = harness(ts, fake, events);
      enricher.ready$.subscribe((r) => ready.push(`${ts.now()}:${r}`));
      // The start asks for its project at 1 (the round's read at 2 joins it: 1-3), networks land
      // at 7 (warm), so c2's start, held from 1, is read 7-11; the round's c2 (from 9) came during
      // that read and is read again after it (11-15), finds the same instance and says nothing;
      // c1 is new to the model (9-13).
      expectObservable(enricher.events$.pipe(map(summary))).toBe('11ms s 1ms a 86ms |', {
        s: 'instance-started default/c2 @10.0.0.6 +p',
        a: 'instance-updated default/c1 @10.0.0.5 +p (round)',
      });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(3), 50);
    });
    expect(ready).toEqual(['0:false', '7:true', '100:false']);
  });

  it('runs round 1 fast and later rounds paced, ReadDelay between reads and SweepInterval between rounds', async () => {
    const ts = newTs();
    const instanceReads: number[] = [];
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.createInstance('default', 'c3', { network: 'br0' }).start('default', 'c3', '10.0.0.7');
      fake.failWhen = (call) => {
        if (call.method === 'getInstance') instanceReads.push(ts.now());
        return undefined;
      };
      ts.schedule(() => fake.configure('default', 'c2', { 'user.v': '2' }), 500);
      const events = hot<IncusStreamItem>('c 1999ms |', { c: connected });
      const h = harness(ts, fake, events, { config: { readDelay: 100, sweepInterval: 1000 } });
      registry = h.registry;
      const enricher = h.enricher;
      // Round 2 starts at 1010: projects 1010-1012 (read at once), networks listed by 1016 but
      // read at 1112, instances listed by 1116 and read at 1212, 1312, 1412; c2's change shows.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('14ms (abc) 1297ms x 683ms |', {
        a: 'instance-updated default/c1 @10.0.0.5 +p (round)',
        b: 'instance-updated default/c2 @10.0.0.6 +p (round)',
        c: 'instance-updated default/c3 @10.0.0.7 +p (round)',
        x: 'instance-updated default/c2 @10.0.0.6 +p (round)',
      });
    });
    // Each instance read's answer arrives 2 ms after it is asked for.
    expect(instanceReads).toEqual([12, 12, 12, 1214, 1314, 1414]);
    expect(await metric(registry!, 'enricher_sweeps_total', { result: 'success' })).toBe(2);
  });

  it('prunes an instance the listing no longer has, as an instance-deleted, and a network the listing no longer has', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.setNetwork('default', 'old');
      const initial = storeOf(fake);
      fake.deleteInstance('default', 'c2');
      fake.deleteNetwork('default', 'old');
      const events = hot<IncusStreamItem>('c 99ms |', { c: connected });
      const { enricher } = harness(ts, fake, events, { initial });
      // Warm from the store: the round's instance listing answers at 10 and c2 leaves then.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('10ms d 89ms |', { d: 'instance-deleted default/c2 +p (prune)' });
      ts.schedule(() => expect(enricher.status()).toMatchObject({ instances: 1, networks: 1 }), 50);
    });
  });

  it('decides absence against the keys held when the listing went out (E5): an instance created meanwhile survives', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(new FakeIncus({ scheduler: ts, latency: 2, snapshotAt: 'call' }));
      fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24' } });
      const initial = storeOf(fake);
      // The instance listing goes out at 8 and, slow, answers at 28 with what the server had at 8.
      fake.latency = (call) => (call.method === 'listInstanceNames' ? 20 : 2);
      ts.schedule(() => fake.createInstance('default', 'c9', { network: 'br0' }).start('default', 'c9', '10.0.0.9'), 9);
      const events = hot<IncusStreamItem>('c 8ms n 90ms |', { c: connected, n: fake.event('instance-created', 'default', 'c9') });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('13ms n 86ms |', { n: 'instance-created default/c9 @10.0.0.9 +p' });
      ts.schedule(() => expect(enricher.status().instances).toBe(3), 60);
    });
  });

  it('a project gone from the listing takes its instances out, each as an instance-deleted (E4)', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.setProject('p2', {});
      fake.createInstance('p2', 'w1', { network: 'br0' }).start('p2', 'w1', '10.0.0.20');
      fake.createInstance('p2', 'w2', { network: 'br0' });
      const initial = storeOf(fake);
      fake.deleteProject('p2');
      const events = hot<IncusStreamItem>('c 99ms |', { c: connected });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('2ms (ab) 94ms |', {
        a: 'instance-deleted p2/w1 +p (prune)',
        b: 'instance-deleted p2/w2 +p (prune)',
      });
      ts.schedule(() => expect(enricher.status()).toMatchObject({ projects: 1, instances: 2 }), 50);
    });
  });

  it('a listing that fails prunes nothing in its scope; the round goes on', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.deleteInstance('default', 'c2');
      fake.failWhen = (call) =>
        call.method === 'listInstanceNames' || call.method === 'listNetworkNames' ? new IncusApiError('busy', 503) : undefined;
      const events = hot<IncusStreamItem>('c 99ms |', { c: connected });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('100ms |');
      ts.schedule(() => expect(enricher.status()).toMatchObject({ instances: 2, networks: 1 }), 50);
    });
  });

  it.each([
    // Incus 6.0 and LXD 5.0, for a certificate restricted to another project.
    ['Incus', 1, new IncusApiError('User does not have permissions for project "default"', 500)],
    ['LXD', 1, new IncusApiError('not authorized', 403)],
    // Anything else is a listing that failed this round: said every round.
    ['a busy server', 3, new IncusApiError('busy', 503)],
  ])(
    '%s: a networks listing refused in three rounds is warned about %i time(s): once for a restricted certificate, every round otherwise',
    (_who, warnings, refusal) => {
      const ts = newTs();
      const lines: Array<{ level: number; msg: string }> = [];
      const logger = pino(
        { level: 'debug' },
        { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) },
      );
      ts.run(({ hot }) => {
        const fake = fleet(smallWorld(ts));
        fake.failWhen = (call) => (call.method === 'listNetworkNames' ? refusal : undefined);
        const events = hot<IncusStreamItem>('c 2999ms |', { c: connected });
        harness(ts, fake, events, {
          initial: storeOf(fake),
          config: { readDelay: 0, sweepInterval: 1000 },
          logger,
        }).enricher.events$.subscribe();
      });
      const aboutNetworks = lines.filter((l) => l.msg.includes('networks of default'));
      // Three rounds in three seconds: each refused.
      expect(aboutNetworks).toHaveLength(3);
      expect(aboutNetworks.filter((l) => l.level === 40)).toHaveLength(warnings);
    },
  );

  it('a failed round is retried soon and fast (E3), not after the sweep interval', async () => {
    const ts = newTs();
    const listings: number[] = [];
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.failWhen = (call) => {
        if (call.method !== 'listProjectNames') return undefined;
        listings.push(ts.now());
        return listings.length <= 2 ? new IncusApiError('unavailable', 503) : undefined;
      };
      const events = hot<IncusStreamItem>('c 29999ms |', { c: connected });
      const h = harness(ts, fake, events);
      registry = h.registry;
      // Failed at 2 and (after 5 s) at 5004; after 10 s more, round 3 at 15 004 is fast: its
      // instance reads land at 15 018.
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('15018ms (ab) 14978ms |', {
        a: 'instance-updated default/c1 @10.0.0.5 +p (round)',
        b: 'instance-updated default/c2 @10.0.0.6 +p (round)',
      });
    });
    expect(listings).toEqual([2, 5004, 15006]);
    expect(await metric(registry!, 'enricher_sweeps_total', { result: 'failed' })).toBe(2);
    expect(await metric(registry!, 'enricher_sweeps_total', { result: 'success' })).toBe(1);
  });

  it('a reconnect abandons the wait between rounds and runs a fast round at once', () => {
    const ts = newTs();
    const listings: number[] = [];
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.failWhen = (call) => {
        if (call.method === 'listProjectNames') listings.push(ts.now());
        return undefined;
      };
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '2' }), 150);
      const events = hot<IncusStreamItem>('c 99ms d 99ms c 99ms |', { c: connected, d: disconnected });
      const { enricher } = harness(ts, fake, events, { config: { readDelay: 1000 } });
      // Round 2 runs at 200, fast (no ReadDelay): c1's change is out by 214.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('14ms (ab) 196ms c 85ms |', {
        a: 'instance-updated default/c1 @10.0.0.5 +p (round)',
        b: 'instance-updated default/c2 @10.0.0.6 +p (round)',
        c: 'instance-updated default/c1 @10.0.0.5 +p (round)',
      });
    });
    expect(listings).toEqual([2, 202]);
  });
});

describe('enricher debounce in the pipeline', () => {
  it('collapses a burst on one subject to its first and last once a round has ended, and counts the middles as dropped', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    let reads = 0;
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '1' }), 50);
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '5' }), 60);
      const u = fake.event('instance-updated', 'default', 'c1');
      // The round ends at 10 (chain warm); the burst of five runs from 50 to 58 (10 ms reads would
      // otherwise each be a read of their own).
      const events = hot<IncusStreamItem>('c 49ms u 1ms u 1ms u 1ms u 1ms u 941ms |', { c: connected, u });
      const h = harness(ts, fake, events, { initial });
      registry = h.registry;
      fake.latency = 1;
      // First at once (read 50-52), the last after 250 ms of quiet (308, read 308-310).
      expectObservable(h.enricher.events$.pipe(map((e) => `${summary(e)} v=${e.instance?.config['user.v']}`))).toBe(
        '52ms a 257ms b 689ms |',
        {
          a: 'instance-updated default/c1 @10.0.0.5 +p v=1',
          b: 'instance-updated default/c1 @10.0.0.5 +p v=5',
        },
      );
      ts.schedule(() => (reads = fake.count('getInstance')), 999);
    });
    // Two reads for the round (c1, c2) and two for the burst.
    expect(reads).toBe(4);
    expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'debounce' })).toBe(3);
  });

  it('collapses nothing before the first round has ended', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      const u = fake.event('instance-updated', 'default', 'c1');
      const events = hot<IncusStreamItem>('u u u 97ms |', { u });
      const h = harness(ts, fake, events, { initial });
      registry = h.registry;
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('100ms |');
    });
    expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'debounce' })).toBe(0);
    expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'unchanged' })).toBe(3);
  });

  it('collapses nothing after a disconnect, until a round has ended again', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    let reads = 0;
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      const u = fake.event('instance-updated', 'default', 'c1');
      const events = hot<IncusStreamItem>('c 19ms d 9ms u u u 67ms |', { c: connected, d: disconnected, u });
      const h = harness(ts, fake, events, { initial });
      registry = h.registry;
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('100ms |');
      ts.schedule(() => (reads = fake.count('getInstance')), 99);
    });
    expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'debounce' })).toBe(0);
    // The round's two names, the first update's read, and one the two during it shared.
    expect(reads).toBe(4);
  });
});
