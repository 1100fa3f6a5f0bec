import { Registry } from 'prom-client';
import { Observable, Subject, defer } from 'rxjs';
import { IncusStreamItem } from '../../../lib/incus/api';
import { silentLogger } from '../../../lib/logger';
import { FakeIncus } from '../../helpers/FakeIncus';
import { memoryColdStore } from '../../helpers/memoryColdStore';
import { createEnricher } from '../../../lib/enricher/pipeline/createEnricher';
import { Mailbox } from '../../../lib/enricher/owner/Mailbox';
import { ObservableIncusReader } from '../../../lib/enricher/reads/observableReader';
import { newTs, settings, summary, warmStore } from './harness';

/** The fake as an Observable reader, with `before` run as each state call is made. */
function readerOf(fake: FakeIncus, before: () => void): ObservableIncusReader {
  return {
    instance$: (p, n) => fake.instance$(p, n),
    instanceState$: (p, n) =>
      defer((): Observable<Awaited<ReturnType<FakeIncus['getInstanceState']>>> => {
        before();
        return fake.instanceState$(p, n);
      }),
    network$: (p, n) => fake.network$(p, n),
    project$: (n) => fake.project$(n),
    projectNames$: () => fake.projectNames$(),
    networkNames$: (p) => fake.networkNames$(p),
    instanceNames$: (p) => fake.instanceNames$(p),
  };
}

describe('the fleet owner', () => {
  it('a read that answered before a delete of its key but lands after it is stale (E7): it stores nothing and its event goes out bare', () => {
    const fake = new FakeIncus({ latency: 0 }).setNetwork('default', 'br0', { config: { 'ipv4.address': '10.0.0.1/24' } });
    fake.createInstance('default', 'c1', { network: 'br0' }).start('default', 'c1', '10.0.0.5');
    const events = new Subject<IncusStreamItem>();
    // The update's read answers at once; the delete comes in while it answers, so the owner takes
    // it in before the read's landing, which waits behind it. Nothing could cancel the read any
    // more: it had already answered.
    let deleted = false;
    const reader = readerOf(fake, () => {
      if (deleted) return;
      deleted = true;
      events.next(fake.event('instance-deleted', 'default', 'c1'));
    });
    const enricher = createEnricher({
      events$: events,
      reader,
      config: settings(),
      registry: new Registry(),
      scheduler: newTs(),
      store: memoryColdStore(warmStore()).open,
    });
    const out: string[] = [];
    enricher.events$.subscribe((event) => out.push(summary(event)));
    events.next(fake.event('instance-updated', 'default', 'c1'));
    expect(fake.count('getInstanceState')).toBe(1);
    expect(out).toEqual(['instance-updated default/c1 +p', 'instance-deleted default/c1 +p']);
    expect(enricher.status().instances).toBe(0);
  });

  it('runs a task posted while another runs after it, never inside it', () => {
    const mailbox = new Mailbox(
      () => undefined,
      (error) => silentLogger.error({ err: error }),
    );
    const order: string[] = [];
    mailbox.post(() => {
      order.push('outer start');
      mailbox.post(() => order.push('inner'));
      order.push('outer end');
    });
    expect(order).toEqual(['outer start', 'outer end', 'inner']);
  });

  it('stops at a task that throws (a bug): the error is handed on once, what was posted behind it and after it never runs', () => {
    const failures: unknown[] = [];
    const mailbox = new Mailbox(
      () => undefined,
      (error) => failures.push(error),
    );
    const ran: string[] = [];
    mailbox.post(() => {
      mailbox.post(() => ran.push('behind'));
      throw new Error('bug');
    });
    mailbox.post(() => ran.push('after'));
    expect(ran).toEqual([]);
    expect(failures).toEqual([new Error('bug')]);
  });
});
