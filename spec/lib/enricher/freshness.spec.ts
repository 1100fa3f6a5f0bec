import { Registry } from 'prom-client';
import { map } from 'rxjs';
import { IncusApiError, IncusStreamItem } from '../../../lib/incus/api';
import { EnrichedEvent } from '../../../lib/enricher/model/event';
import { FakeIncus } from '../../helpers/FakeIncus';
import { harness, metric, newTs, smallWorld, storeOf, summary } from './harness';

// DECISIONS E10: what leaves the enricher never goes back in time. An answer the enricher went
// looking for on its own (a repair, a fan-out, a round's name) is released only if no newer answer
// about the same instance has been released before it, and a round's read that finds the
// instance gone says nothing. And a rename closes what debounce holds under the old name.

const connected: IncusStreamItem = { kind: 'connected' };

/** A world that answers as a server does: with what it held when the call came in. */
function answeringAtCall(ts: ReturnType<typeof newTs>, latency: number): FakeIncus {
  const fake = new FakeIncus({ scheduler: ts, latency, snapshotAt: 'call' });
  fake.setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24', 'ipv6.address': 'none' } });
  return fake;
}

const withRunning = (e: EnrichedEvent): string => `${summary(e)} running=${e.instance?.running ?? '-'}`;
const withConfig =
  (key: string) =>
  (e: EnrichedEvent): string =>
    `${summary(e)} ${key}=${e.instance?.config[key] ?? '-'}`;

describe('enricher answers never go back in time (E10)', () => {
  it('a repair whose read was at the server when the instance stopped is not released after the stop', async () => {
    const ts = newTs();
    let registry: Registry | undefined;
    ts.run(({ hot, expectObservable }) => {
      const fake = answeringAtCall(ts, 5);
      fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
      const initial = storeOf(fake);
      let failures = 1;
      fake.failWhen = (call) => (call.method === 'getInstance' && failures-- > 0 ? new IncusApiError('busy', 503) : undefined);
      // The update's read fails at 5; its repair goes out at 1005: the instance is read running
      // (1005-1010), it stops at 1007, and its state is read stopped (1010-1015). The stop event
      // came at 1007, during that read, so it is answered by a read of its own (1015-1025), and
      // the repair's answer, which began before it, goes nowhere.
      ts.schedule(() => fake.stop('default', 'c1'), 1007);
      const events = hot('u 1006ms s 2992ms |', {
        u: fake.event('instance-updated', 'default', 'c1'),
        s: fake.event('instance-stopped', 'default', 'c1'),
      });
      const h = harness(ts, fake, events, { initial });
      registry = h.registry;
      expectObservable(h.enricher.events$.pipe(map(withRunning))).toBe('5ms u 1019ms s 2974ms |', {
        u: 'instance-updated default/c1 [failed] +p running=-',
        s: 'instance-stopped default/c1 @- +p running=false',
      });
    });
    expect(await metric(registry!, 'enricher_events_dropped_total', { reason: 'stale' })).toBe(1);
  });

  it('a repair waiting for an address does not send the configuration from before a change announced during its wait', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1');
      ts.schedule(() => fake.configure('default', 'c1', { 'user.label': 'blue' }), 3500);
      ts.schedule(() => fake.lease('default', 'c1', '10.0.0.5'), 4000);
      const events = hot('s 3499ms u 5499ms |', {
        s: fake.event('instance-started', 'default', 'c1'),
        u: fake.event('instance-updated', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial: storeOf(smallWorld(ts)), config: { ipTimeout: 2000 } });
      // The start waits out its 2 s for a lease (2004). The repair 1 s later reads the instance
      // (3004-3006) and polls its state: the lease lands at 4000, the poll at 4058 sees it (4060).
      // The label came at 3500, after the repair's instance read: the update is read again
      // (4060-4064) and carries it. The repair's answer, older, goes nowhere.
      expectObservable(enricher.events$.pipe(map(withConfig('user.label')))).toBe('2004ms s 2059ms u 4935ms |', {
        s: 'instance-started default/c1 @- +p user.label=-',
        u: 'instance-updated default/c1 @10.0.0.5 +p user.label=blue',
      });
    });
  });

  it('a profile fan-out read before a second profile change is not released after the live event that carries the change', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = answeringAtCall(ts, 2);
      fake.setProfile('default', 'web', { config: { 'user.tier': 'a' } });
      fake.createInstance('default', 'c1', { network: 'br0', profiles: ['default', 'web'] }).start('default', 'c1', '10.0.0.5');
      const initial = storeOf(fake);
      fake.setProfile('default', 'web', { config: { 'user.tier': 'b' } });
      ts.schedule(() => fake.setProfile('default', 'web', { config: { 'user.tier': 'c' } }), 1);
      // LXD announces a profile change to every instance using it as well (lxd-fixture §3).
      const events = hot('p (qu) 95ms |', {
        p: fake.event('profile-updated', 'default', 'web'),
        q: fake.event('profile-updated', 'default', 'web'),
        u: fake.event('instance-updated', 'default', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      // The first fan-out reads c1 at 0-4 (tier b); the second change and c1's update came at 1,
      // during that read, and are answered by the next one (4-8, tier c).
      expectObservable(enricher.events$.pipe(map(withConfig('user.tier')))).toBe('p q 6ms u 91ms |', {
        p: 'profile-updated default/web user.tier=-',
        q: 'profile-updated default/web user.tier=-',
        u: 'instance-updated default/c1 @10.0.0.5 +p user.tier=c',
      });
    });
  });

  it("a round's read that finds the instance gone after its delete went out says nothing", () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = answeringAtCall(ts, 2);
      fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
      fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
      const initial = storeOf(fake);
      // The round's instance listing goes out at 8 and names c2; c2 is deleted at 9, its delete
      // goes out, and the round's read of c2 (10-12) finds nothing: that is not news.
      ts.schedule(() => fake.deleteInstance('default', 'c2'), 9);
      const events = hot<IncusStreamItem>('c 8ms d 90ms |', { c: connected, d: fake.event('instance-deleted', 'default', 'c2') });
      const { enricher } = harness(ts, fake, events, { initial });
      expectObservable(enricher.events$.pipe(map(summary))).toBe('9ms d 90ms |', { d: 'instance-deleted default/c2 +p' });
      ts.schedule(() => expect(fake.count('getInstance')).toBe(2), 50);
    });
  });
});

describe('debounce and renames', () => {
  it('a rename closes the debounce window held under the old name first: nothing about the old name leaves after the rename', () => {
    const ts = newTs();
    ts.run(({ hot, expectObservable }) => {
      const fake = smallWorld(ts);
      fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
      fake.createInstance('default', 'c2', { network: 'br0' }).start('default', 'c2', '10.0.0.6');
      const initial = storeOf(fake);
      ts.schedule(() => fake.configure('default', 'c1', { 'user.v': '1' }), 40);
      ts.schedule(() => fake.renameInstance('default', 'c1', 'web'), 65);
      const u = fake.event('instance-updated', 'default', 'c1');
      // The round ends at 10 (the chain is warm); the burst on c1 opens a window at 50 and holds
      // its second update from 60; the rename comes at 70.
      const events = hot<IncusStreamItem>('c 49ms u 9ms u 9ms r 929ms |', {
        c: connected,
        u,
        r: fake.event('instance-renamed', 'default', 'web', 'c1'),
      });
      const { enricher } = harness(ts, fake, events, { initial });
      // The held update leaves before the rename, as it arrived: its read (asked for the old
      // name) is made stale by the rename (E7).
      expectObservable(enricher.events$.pipe(map(summary))).toBe('54ms a 15ms b 3ms r 925ms |', {
        a: 'instance-updated default/c1 @10.0.0.5 +p',
        b: 'instance-updated default/c1 +p',
        r: 'instance-renamed default/web<c1 @10.0.0.5 +p',
      });
    });
  });
});
