import { map } from 'rxjs';
import { FakeIncus } from '../../../lib/incus/FakeIncus';
import { EnrichedEvent } from '../../../lib/enricher/event';
import { harness, newTs, smallWorld, storeOf, summary } from './harness';

/** c1, c2, c3 running on br0. */
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

  it('coalesces events on one key into the read in flight: one read, every event answered, in order', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      const initial = storeOf(fake);
      fake.latency = 5;
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '2' }), 0);
      const events = hot('u p s 97ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        p: fake.event('instance-paused', 'default', 'c1'),
        s: fake.event('instance-stopped', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('10ms (ups) 85ms |', {
        u: 'instance-updated default/c1 @10.0.0.5 +p',
        p: 'instance-paused default/c1 @10.0.0.5 +p',
        s: 'instance-stopped default/c1 @10.0.0.5 +p',
      });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(1), 50);
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

  it('a plain event joins an instance-started read in flight rather than superseding it', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = fleet(smallWorld(ts));
      fake.createInstance('default', 'n1', { network: 'br0' });
      const initial = storeOf(fake);
      fake.latency = 10;
      ts.schedule(() => fake.start('default', 'n1', '10.0.0.9'), 0);
      const events = hot('s 4ms u 94ms |', {
        s: fake.event('instance-started', 'default', 'n1'),
        u: fake.event('instance-updated', 'default', 'n1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('20ms (su) 76ms |', {
        s: 'instance-started default/n1 @10.0.0.9 +p',
        u: 'instance-updated default/n1 @10.0.0.9 +p',
      });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(1), 50);
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

  it('a rename drops the old name and reads the new one; the old name\'s reads are stale', () => {
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
