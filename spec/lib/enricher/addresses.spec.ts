import { Registry } from 'prom-client';
import { map } from 'rxjs';
import { EnrichedEvent } from '../../../lib/enricher/model/event';
import { FakeIncus } from '../../helpers/FakeIncus';
import { harness, metric, newTs, smallWorld, storeOf, summary } from './harness';

// What an address is worth waiting for, and what an instance that never gets one may cost
// (DECISIONS E11).

const withV6 = (e: EnrichedEvent): string => `${summary(e)} v6=${e.instance?.interfaces.flatMap((i) => i.ipv6).join(',') ?? '-'}`;

/** c1 running with an IPv4 lease, on br0. */
function healthy(fake: FakeIncus): FakeIncus {
  return fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
}

describe('enricher addresses', () => {
  it('a global IPv6 address is an address: an IPv6-only instance is answered at once, and holds nothing behind it', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = healthy(smallWorld(ts));
      fake.createInstance('default', 'v6', { network: 'br0' });
      const initial = storeOf(fake);
      fake.start('default', 'v6').leaseIpv6('default', 'v6', '2001:db8::6');
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '2' }), 0);
      ts.schedule(() => fake.configure('default', 'v6', { 'user.v': '2' }), 10);
      const events = hot('s u 8ms w 89ms |', {
        s: fake.event('instance-started', 'default', 'v6'),
        u: fake.event('instance-updated', 'default', 'c1'),
        w: fake.event('instance-updated', 'default', 'v6'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(withV6))).toBe('4ms s u 8ms w 85ms |', {
        s: 'instance-started default/v6 @- +p v6=2001:db8::6',
        u: 'instance-updated default/c1 @10.0.0.5 +p v6=',
        w: 'instance-updated default/v6 @- +p v6=2001:db8::6',
      });
      // One state read each: nothing polled for an IPv4 that will never come, nothing repaired.
      ts.schedule(() => expect(fake.count('getInstanceState')).toBe(3), 90);
    });
  });

  it("an instance waiting for its address holds no worker between polls: a healthy instance's read goes meanwhile", () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = healthy(smallWorld(ts));
      fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2');
      const initial = storeOf(fake);
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '2' }), 3100);
      const events = hot('a 3099ms u 1899ms |', {
        a: fake.event('instance-updated', 'default', 'c2'),
        u: fake.event('instance-updated', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial, config: { workers: 1, ipTimeout: 2000 } });
      // c2's read waits 2 s for a lease (to 2004); its repair at 3004 polls again until 5008 with
      // the one worker free between polls, so c1's update is read at once (3100-3104).
      expectObservable(enricher.events$.pipe(map(summary))).toBe('3104ms u 1895ms |', {
        u: 'instance-updated default/c1 @10.0.0.5 +p',
      });
    });
  });

  it('repairs an instance without an address 1 s later three times, then backs off from 5 s to 5 min without polling; a live event starts it over; a gauge counts such instances', async () => {
    const ts = newTs();
    const attempts: number[] = [];
    let registry: Registry | undefined;
    const awaiting: number[] = [];
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.createInstance('default', 'c1', { network: 'br0' });
      const initial = storeOf(fake);
      fake.start('default', 'c1');
      fake.failWhen = (call) => {
        if (call.method === 'getInstance') attempts.push(ts.now());
        return undefined;
      };
      ts.schedule(() => fake.lease('default', 'c1', '10.0.0.5'), 1_000_000);
      const events = hot('s 199999ms u 1099999ms |', {
        s: fake.event('instance-started', 'default', 'c1'),
        u: fake.event('instance-updated', 'default', 'c1'),
      });
      const h = harness(ts, fake, events, { initial, config: { ipTimeout: 2000 } });
      registry = h.registry;
      for (const at of [2500, 999_999, 1_200_000]) ts.schedule(() => awaiting.push(h.enricher.status().awaitingAddress), at);
      // The start waits 2 s (to 2004) and goes out without an address; the update at 200 000
      // too (to 202 004); the first repair after the lease (at 1 000 000) finds it and sends it.
      expectObservable(h.enricher.events$.pipe(map(summary))).toBe('2004ms s 199999ms u 924043ms r 173951ms |', {
        s: 'instance-started default/c1 @- +p',
        u: 'instance-updated default/c1 @- +p',
        r: 'instance-updated default/c1 @10.0.0.5 +p (repair)',
      });
    });
    // When each instance call answered (2 ms after it was made): fast rungs (1 s after each
    // answer) poll for 2 s; slow ones read once, 5 s, 10 s, 20 s ... apart, at most 5 min. The
    // update at 200 000 starts the ladder over.
    expect(attempts).toEqual([
      2, 3006, 6010, 9014, 16018, 26022, 46026, 86030, 166034, 200_002, 203_006, 206_010, 209_014, 216_018, 226_022, 246_026, 286_030,
      366_034, 526_038, 826_042, 1_126_046,
    ]);
    expect(awaiting).toEqual([1, 1, 0]);
    expect(await metric(registry!, 'enricher_instances_awaiting_address')).toBe(0);
  });
});
