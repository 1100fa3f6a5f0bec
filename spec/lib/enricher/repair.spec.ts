import { map } from 'rxjs';
import { IncusApiError } from '../../../lib/incus/api';
import { FakeIncus } from '../../helpers/FakeIncus';
import { harness, metric, newTs, smallWorld, storeOf, summary, warmStore } from './harness';
import { Registry } from 'prom-client';

function oneInstance(fake: FakeIncus): FakeIncus {
  fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
  return fake;
}

describe('enricher repair, ip wait and ttl', () => {
  it('fails the event of a read that failed, then reads the key again 1 s later, three times, then every 5 s for ever (E2: one repair per key)', () => {
    const ts = newTs();
    const attempts: number[] = [];
    ts.run(({ hot, expectObservable }) => {
      const fake = oneInstance(smallWorld(ts));
      const initial = storeOf(fake);
      fake.failWhen = (call) => {
        if (call.method !== 'getInstance') return undefined;
        attempts.push(ts.now());
        return new IncusApiError('boom', 500);
      };
      // Three events on the key in one read, and one more while a repair is already pending:
      // still one repair at a time.
      const update = fake.event('instance-updated', 'default', 'c1');
      const events = hot('uuu 497ms u 19499ms |', { u: update });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('2ms (uuu) 495ms u 19497ms |', {
        u: 'instance-updated default/c1 [failed] +p',
      });
    });
    // Answers at: 2 (the events' read), 502 (the late event's), then repairs 1 s, 1 s, 1 s after
    // the first failure's answer, then 5 s apart.
    expect(attempts).toEqual([2, 502, 1004, 2006, 3008, 8010, 13012, 18014]);
  });

  it('a key that reads well again has its attempts cleared and starts from the fast rungs', () => {
    const ts = newTs();
    const attempts: number[] = [];
    ts.run(({ hot, expectObservable }) => {
      const fake = oneInstance(smallWorld(ts));
      const initial = storeOf(fake);
      let failing = true;
      ts.schedule(() => (failing = false), 2500);
      ts.schedule(() => (failing = true), 5000);
      fake.failWhen = (call) => {
        if (call.method !== 'getInstance') return undefined;
        attempts.push(ts.now());
        return failing ? new IncusApiError('boom', 500) : undefined;
      };
      const events = hot('u 4999ms u 2999ms |', { u: fake.event('instance-updated', 'default', 'c1') });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('2ms u 4999ms u 2997ms |', {
        u: 'instance-updated default/c1 [failed] +p',
      });
    });
    // Failed at 2, 1004 and 2006, read well at 3008 (the repair finds nothing new: no event); the
    // failure at 5002 starts the ladder over at 1 s rather than going on at 5 s.
    expect(attempts).toEqual([2, 1004, 2006, 3008, 5002, 6004, 7006]);
  });

  it('an instance on a network nothing has read (one its certificate may not list) waits for that network, read by name, and goes out at once', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.setNetwork('default', 'late', { config: { 'ipv4.address': '10.9.0.1/24' } });
      fake.createInstance('default', 'c1', { network: 'late' }).start('default', 'c1', '10.9.0.5');
      const events = hot('u 1999ms |', { u: fake.event('instance-updated', 'default', 'c1') });
      const { enricher } = harness(ts, fake, events, { initial: warmStore() });
      // Read at 4, incomplete: the network is read (lands at 6) and the answer placed then, no repair.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('6ms u 1993ms |', {
        u: 'instance-updated default/c1 @10.9.0.5 +p',
      });
      ts.schedule(() => expect(enricher.status().networks).toBe(2), 500);
      ts.schedule(() => expect(fake.count('getInstance')).toBe(1), 1999);
    });
  });

  it('when that network cannot be read either, the event fails and the repair places the instance', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.setNetwork('default', 'late', { config: { 'ipv4.address': '10.9.0.1/24' } });
      fake.createInstance('default', 'c1', { network: 'late' }).start('default', 'c1', '10.9.0.5');
      let refused = 0;
      fake.failWhen = (call) => (call.method === 'getNetwork' && refused++ === 0 ? new Error('not now') : undefined);
      const events = hot('u 1999ms |', { u: fake.event('instance-updated', 'default', 'c1') });
      const { enricher } = harness(ts, fake, events, { initial: warmStore() });
      // Read at 4, incomplete; the network read fails at 6: failed, the network asked again (lands
      // at 8); the repair 1 s after the failure (1006) lands at 1010.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('6ms f 1003ms r 989ms |', {
        f: 'instance-updated default/c1 [failed] +p',
        r: 'instance-updated default/c1 @10.9.0.5 +p (repair)',
      });
    });
  });

  it("waits up to the IP timeout for a started instance's lease, sends what it has, and repairs it until the lease lands", () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1');
      ts.schedule(() => fake.lease('default', 'c1', '10.0.0.5'), 12_000);
      const events = hot('s 19999ms |', { s: fake.event('instance-started', 'default', 'c1') });
      const { enricher } = harness(ts, fake, events, { initial: warmStore(), config: { ipTimeout: 2000 } });
      // First answer at 4, polls from 154 until the IP timeout at 2004: sent without an address.
      // Repairs 1 s after each answer, each polling up to 2 s: asked at 3004, 6008 and 9012,
      // answering at 5008, 8012 and 11016 without an address; then 5 s: asked at 16016, it finds
      // the lease that landed at 12 000 and sends the address at 16020.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('2004ms s 14015ms r 3979ms |', {
        s: 'instance-started default/c1 @- +p',
        r: 'instance-updated default/c1 @10.0.0.5 +p (repair)',
      });
    });
  });

  it('a 404 settles the event bare, retries nothing, and leaves the delete to the delete event', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = oneInstance(smallWorld(ts));
      const initial = storeOf(fake);
      fake.deleteInstance('default', 'c1');
      const events = hot('u 99ms d 4899ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        d: fake.event('instance-deleted', 'default', 'c1'),
      });
      const h = harness(ts, fake, events, { initial });
      registry = h.registry;
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('2ms u 97ms d 4899ms |', {
        u: 'instance-updated default/c1 +p',
        d: 'instance-deleted default/c1 +p',
      });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(1), 4000);
    });
    expect(await metric(registry!, 'enricher_reads_total', { kind: 'instance', result: 'not_found' })).toBe(1);
  });

  it('with a TTL, reads an instance again that long after its last good read and sends what changed', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = oneInstance(smallWorld(ts));
      const initial = storeOf(fake);
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '1' }), 0);
      ts.schedule(() => fake.configure('default', 'c1', { 'user.silent': 'change' }), 1000);
      const events = hot('u 149999ms |', { u: fake.event('instance-updated', 'default', 'c1') });
      const { enricher } = harness(ts, fake, events, { initial, config: { ttl: 60_000 } });
      // 4: the event; 60 008: the TTL read finds the change nobody announced; 120 012: nothing new.
      expectObservable(enricher.events$.pipe(map(summary))).toBe('4ms e 60003ms t 89991ms |', {
        e: 'instance-updated default/c1 @10.0.0.5 +p',
        t: 'instance-updated default/c1 @10.0.0.5 +p (ttl)',
      });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(3), 149_000);
    });
  });
});
