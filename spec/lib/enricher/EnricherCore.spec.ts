import { Registry } from 'prom-client';
import { Observable } from 'rxjs';
import { silentLogger } from '../../../lib/logger';
import { FakeIncus } from '../../helpers/FakeIncus';
import { EnricherCore } from '../../../lib/enricher/EnricherCore';
import { EnrichedEvent, newEvent } from '../../../lib/enricher/event';
import { EnricherMetrics } from '../../../lib/enricher/metrics';
import { daemonWanted } from '../../../lib/enricher/wanted';
import { newTs, settings, summary, warmStore } from './harness';

/** A core on a fake that answers synchronously, and what it emits. */
function core(fake: FakeIncus): { owner: EnricherCore; out: string[] } {
  const out: string[] = [];
  const ts = newTs();
  const config = settings();
  let owner: EnricherCore | undefined;
  new Observable<EnrichedEvent>((subscriber) => {
    owner = new EnricherCore(
      {
        reader: fake,
        wanted: daemonWanted(),
        served: config.projects,
        workers: 16,
        ipTimeout: 1000,
        readDelay: 0,
        sweepInterval: 1000,
        ttl: 0,
        configExclude: [],
        scheduler: ts,
        logger: silentLogger,
        metrics: new EnricherMetrics(new Registry()),
        initial: warmStore(),
      },
      subscriber,
    );
    owner.start();
  }).subscribe((event) => out.push(summary(event)));
  return { owner: owner as EnricherCore, out };
}

const event = (action: string, name: string): EnrichedEvent => newEvent({ action, project: 'default', name, origin: 'incus', received: 0 });

describe('the enricher core', () => {
  it('a read that answered before a delete of its key but lands after it is stale (E7): it stores nothing and its event goes out bare', () => {
    const fake = new FakeIncus({ latency: 0 }).setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24' } });
    fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
    const { owner, out } = core(fake);
    // One task: the update's read answers at once (its landing is queued behind this task), then
    // the delete is taken in. Nothing could cancel the read any more: it had already answered.
    owner.post(() => {
      owner.accept(event('instance-updated', 'c1'));
      owner.accept(event('instance-deleted', 'c1'));
    });
    expect(fake.count('getInstanceState')).toBe(1);
    expect(out).toEqual(['instance-updated default/c1 +p', 'instance-deleted default/c1 +p']);
    expect(owner.fleet.instance('default', 'c1')).toBeUndefined();
  });

  it('runs a task posted while another runs after it, never inside it', () => {
    const fake = new FakeIncus({ latency: 0 }).setNetwork('default', 'br0');
    const { owner } = core(fake);
    const order: string[] = [];
    owner.post(() => {
      order.push('outer start');
      owner.post(() => order.push('inner'));
      order.push('outer end');
    });
    expect(order).toEqual(['outer start', 'outer end', 'inner']);
  });

  it('carries on after a task that throws (a bug), running what was posted behind it', () => {
    const fake = new FakeIncus({ latency: 0 }).setNetwork('default', 'br0');
    const { owner } = core(fake);
    const ran: string[] = [];
    owner.post(() => {
      owner.post(() => ran.push('after'));
      throw new Error('bug');
    });
    expect(ran).toEqual(['after']);
  });
});
