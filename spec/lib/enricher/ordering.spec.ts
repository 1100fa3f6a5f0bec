import { filter, map } from 'rxjs';
import { FakeIncus } from '../../helpers/FakeIncus';
import { EnrichedEvent } from '../../../lib/enricher/model/event';
import { harness, newTs, smallWorld, storeOf, summary } from './harness';

/** c1, c2, c3 running on br0. */
/** A world that answers as a server does: with what it held when the call came in. */
function answeringAtCall(ts: ReturnType<typeof newTs>, latency: number): FakeIncus {
  const fake = new FakeIncus({ scheduler: ts, latency, snapshotAt: 'call' });
  fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24', 'ipv6.address': 'none' } });
  return fake;
}

function fleet(fake: FakeIncus): FakeIncus {
  fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
  fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
  fake.createInstance('default', 'c3', { network: 'br0' }).start('default', 'c3', '10.0.0.7');
  return fake;
}

describe('enricher ordering, coalescing and superseding', () => {
  it('releases events in the order they arrived, whatever order their reads land in', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      // c1's calls take 20 ms, everything else 1 ms.
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.latency = (call) => (call.name === 'c1' ? 20 : 1);
      ts.schedule(() => ['c1', 'c2', 'c3'].forEach((n) => fake.configure('default', n, { 'user.v': '2' })), 0);
      const events = hot('a b d c 96ms |', {
        a: fake.event('instance-updated', 'default', 'c1'),
        b: fake.event('instance-updated', 'default', 'c2'),
        d: fake.event('instance-deleted', 'default', 'c3'),
        c: fake.event('instance-stopped', 'default', 'c2'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      // c2's read lands at 3 and the delete needs none, but both wait behind c1's, landing at 40.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('40ms (abdc) 54ms |', {
        a: 'instance-updated default/c1 @10.0.0.5 +p',
        b: 'instance-updated default/c2 @10.0.0.6 +p',
        d: 'instance-deleted default/c3 +p',
        c: 'instance-stopped default/c2 @10.0.0.6 +p',
      });
    });
  });

  it('coalesces events on one key that arrive while its read waits for a worker: one read, every event answered, in order', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.latency = 5;
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '2' }), 0);
      // One worker, busy with c2 until 10: c1's read waits for it, and everything on c1 joins.
      const events = hot('w u p s 95ms |', {
        w: fake.event('instance-updated', 'default', 'c2'),
        u: fake.event('instance-updated', 'default', 'c1'),
        p: fake.event('instance-paused', 'default', 'c1'),
        s: fake.event('instance-stopped', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial, config: { workers: 1 } });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('20ms (ups) 74ms |', {
        u: 'instance-updated default/c1 @10.0.0.5 +p',
        p: 'instance-paused default/c1 @10.0.0.5 +p',
        s: 'instance-stopped default/c1 @10.0.0.5 +p',
      });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(2), 50);
    });
  });

  it('answers events that arrive while their key is being read with one follow-up read, never with what was read before they came', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(answeringAtCall(ts, 5));
      const initial = storeOf(fake);
      fake.configure('default', 'c1', { 'user.v': '2' });
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '3' }), 3);
      const events = hot('u 2ms p s 95ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        p: fake.event('instance-paused', 'default', 'c1'),
        s: fake.event('instance-stopped', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      // u's read runs 0-10 and found v=2; p and s came during it and share the next read, 10-20 (v=3).
      expectObservable(enricher.events$.pipe(map((e) => `${summary(e)} v=${e.instance?.config['user.v']}`))).toBe(
        '10ms u 9ms (ps) 76ms |',
        {
          u: 'instance-updated default/c1 @10.0.0.5 +p v=2',
          p: 'instance-paused default/c1 @10.0.0.5 +p v=3',
          s: 'instance-stopped default/c1 @10.0.0.5 +p v=3',
        },
      );
      ts.schedule(() => expect(fake.count('getInstance')).toBe(2), 50);
    });
  });

  it('reads a network again for a network-updated that came while it was being read', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(answeringAtCall(ts, 5));
      const initial = storeOf(fake);
      ts.schedule(() => fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.9.1/24', 'ipv6.address': 'none' } }), 2);
      const events = hot('a 2ms b 96ms |', {
        a: fake.event('network-updated', 'default', 'br0'),
        b: fake.event('network-updated', 'default', 'br0'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(
        enricher.events$.pipe(
          filter((e) => e.kind === 'network'),
          map(summary),
        ),
      ).toBe('5ms a 4ms b 89ms |', {
        a: 'network-updated default/br0 {10.0.0.1/24}',
        b: 'network-updated default/br0 {10.0.9.1/24}',
      });
    });
  });

  it('a second event with the same action on the same answer says nothing new and is trashed in place', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.latency = 5;
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '2' }), 0);
      const events = hot('u d u 97ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        d: fake.event('instance-deleted', 'default', 'c2'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      // The delete settles at once, yet leaves behind the first update, which holds its place.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('10ms (ud) 86ms |', {
        u: 'instance-updated default/c1 @10.0.0.5 +p',
        d: 'instance-deleted default/c2 +p',
      });
    });
  });

  it('an instance-started supersedes a plain read in flight: it is aborted, and one read running with an address answers both', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.createInstance('default', 'n1', { network: 'br0' });
      const initial = storeOf(fake);
      fake.latency = 10;
      ts.schedule(() => fake.setStatus('default', 'n1', 'Starting'), 0);
      ts.schedule(() => fake.start('default', 'n1', '10.0.0.9'), 100);
      const events = hot('u 4ms s 394ms |', {
        u: fake.event('instance-updated', 'default', 'n1'),
        s: fake.event('instance-started', 'default', 'n1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      // The plain read asked at 0 would have landed at 20 with a Starting instance; the start at
      // 5 aborts it, reads (instance at 15, state at 25: Starting), polls every 150 ms from 25:
      // the poll at 175 answers at 185 with Running and an address, and the instance, read while
      // it was Starting, is read again: 195.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('195ms (us) 201ms |', {
        u: 'instance-updated default/n1 @10.0.0.9 +p',
        s: 'instance-started default/n1 @10.0.0.9 +p',
      });
      ts.schedule(() => {
        // The aborted read's instance call, the superseding read's, and the re-read.
        expect(fake.count('getInstance')).toBe(3);
        expect(fake.count('getInstanceState')).toBe(2);
      }, 300);
    });
  });

  it('a plain event neither supersedes an instance-started read in flight nor takes its answer: it is read once the start has landed', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(answeringAtCall(ts, 10));
      fake.createInstance('default', 'n1', { network: 'br0' });
      const initial = storeOf(fake);
      fake.start('default', 'n1', '10.0.0.9');
      ts.schedule(() => fake.configure('default', 'n1', { 'user.role': 'db' }), 4);
      const events = hot('s 4ms u 94ms |', {
        s: fake.event('instance-started', 'default', 'n1'),
        u: fake.event('instance-updated', 'default', 'n1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      // The start's read (0-20) fetched the instance before the update; the update's own read
      // (20-40) shows it. Joining would have sent the update with the old configuration, found
      // it unchanged, and lost it.
      expectObservable(enricher.events$.pipe(map((e) => `${summary(e)} ${e.instance?.config['user.role'] ?? '-'}`))).toBe(
        '20ms s 19ms u 59ms |',
        {
          s: 'instance-started default/n1 @10.0.0.9 +p -',
          u: 'instance-updated default/n1 @10.0.0.9 +p db',
        },
      );
      ts.schedule(() => expect(fake.count('getInstance')).toBe(2), 50);
    });
  });

  it('a delete makes every read of that key asked for before it stale (E7): the read is aborted, the earlier event goes out bare, nothing is stored', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.latency = 10;
      const events = hot('u 4ms d 94ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        d: fake.event('instance-deleted', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('5ms (ud) 91ms |', {
        u: 'instance-updated default/c1 +p',
        d: 'instance-deleted default/c1 +p',
      });
      ts.schedule(() => {
        expect(enricher.status().instances).toBe(2);
        expect(fake.count('getInstanceState')).toBe(0);
      }, 60);
    });
  });

  it('a read of a name created again after its delete is a new read, not the stale one', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.latency = 10;
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': 'new' }), 5);
      const events = hot('u 4ms d c 93ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        d: fake.event('instance-deleted', 'default', 'c1'),
        c: fake.event('instance-created', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      const withVersion = map((e: EnrichedEvent) => `${summary(e)} v=${e.instance?.config['user.v'] ?? ''}`);
      expectObservable(enricher.events$.pipe(withVersion)).toBe('5ms (ud) 17ms c 73ms |', {
        u: 'instance-updated default/c1 +p v=',
        d: 'instance-deleted default/c1 +p v=',
        c: 'instance-created default/c1 @10.0.0.5 +p v=new',
      });
      ts.schedule(() => expect(enricher.status().instances).toBe(3), 60);
    });
  });

  it("a rename drops the old name and reads the new one; the old name's reads are stale", () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      ts.schedule(() => fake.renameInstance('default', 'c1', 'web'), 1);
      const events = hot('u r 98ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        r: fake.event('instance-renamed', 'default', 'web', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('1ms u 3ms r 94ms |', {
        u: 'instance-updated default/c1 +p',
        r: 'instance-renamed default/web<c1 @10.0.0.5 +p',
      });
      ts.schedule(() => expect(enricher.status().instances).toBe(3), 60);
    });
  });
});
