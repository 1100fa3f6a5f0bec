import { Observable, map } from 'rxjs';
import { FleetInput, FleetInstance, FleetLedger, FleetUpdate, GoneInstance, mergeFleet } from 'rxfleet';
import { EventPayload } from '../../../lib/enricher/output/payload';
import { newScheduler } from '../../helpers/marbles';

// The read-then-follow merge in virtual time: the state bucket's snapshot, then the stream's
// events, merged by each instance's own sequence. Imported from the package's main entry, as a
// consumer's pipeline imports it.

const instance = (running: boolean, ipv4: string[] = []) => ({
  type: 'container',
  status: running ? 'Running' : 'Stopped',
  running,
  location: 'none',
  profiles: ['default'],
  config: {},
  interfaces: [{ name: 'eth0', device: 'eth0', project: 'default', network: 'br0', managed: true, ipv4, ipv6: [] }],
  networks: {},
});

function event(action: string, name: string, seq: number | undefined, extra: Partial<EventPayload> = {}): EventPayload {
  return {
    version: 1,
    action,
    kind: 'instance',
    project: 'default',
    name,
    status: 'ok',
    origin: 'incus',
    received: '2026-12-01T10:00:00.000Z',
    enriched: action === 'instance-deleted' ? [] : ['instance', 'interfaces'],
    ...(action === 'instance-deleted' ? {} : { instance: instance(action !== 'instance-stopped', ['10.0.0.5']) }),
    ...(seq === undefined ? {} : { instance_seq: seq }),
    ...extra,
  };
}

const held = (name: string, seq: number, e = event('instance-started', name, seq)): FleetInstance => ({
  project: 'default',
  name,
  seq,
  event: e,
});
const snapshot = (instances: FleetInstance[], gone: GoneInstance[] = [], watermark = 10): FleetInput => ({
  kind: 'snapshot',
  instances,
  gone,
  watermark,
});
const on = (e: EventPayload, streamSeq: number): FleetInput => ({ kind: 'event', event: e, streamSeq });

/** An update as a marble value: what a consumer reads off it. */
function summary(update: FleetUpdate): string {
  if (update.kind === 'state') return `state:${[...update.instances.keys()].sort().join(',')}@${update.watermark}`;
  const now = update.instance === undefined ? 'gone' : `${update.instance.seq}:${update.instance.event.action}`;
  return `${update.event.action.replace('instance-', '')} ${update.event.name}#${update.event.instance_seq ?? '-'} -> ${now}, missed ${update.missed}`;
}

const merged = (source: Observable<FleetInput>): Observable<string> => source.pipe(mergeFleet(), map(summary));

describe('mergeFleet (read-then-follow)', () => {
  it('emits the fleet once, then each change; what the snapshot already holds, and a repeat, say nothing', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const input = cold('s-a-b-c-d-|', {
        s: snapshot([held('c1', 2), held('c2', 1)]),
        a: on(event('instance-started', 'c1', 2), 9), // in the snapshot already (written after the watermark)
        b: on(event('instance-stopped', 'c1', 3), 11),
        c: on(event('instance-stopped', 'c1', 3), 12), // the duplicate window let a repeat through
        d: on(event('instance-updated', 'c2', 2), 13),
      });
      expectObservable(merged(input)).toBe('s---b---d-|', {
        s: 'state:default/c1,default/c2@10',
        b: 'stopped c1#3 -> 3:instance-stopped, missed 0',
        d: 'updated c2#2 -> 2:instance-updated, missed 0',
      });
      expectSubscriptions(input.subscriptions).toBe('^---------!');
    });
  });

  it('counts a gap on the event after it, and applies that event', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const input = cold('s-a-b|', {
        s: snapshot([held('c1', 1)]),
        a: on(event('instance-updated', 'c1', 4), 11),
        b: on(event('instance-updated', 'c1', 5), 12),
      });
      expectObservable(merged(input)).toBe('s-a-b|', {
        s: 'state:default/c1@10',
        a: 'updated c1#4 -> 4:instance-updated, missed 2',
        b: 'updated c1#5 -> 5:instance-updated, missed 0',
      });
    });
  });

  it('a delete removes the instance and keeps its sequence: a late repeat of an older event says nothing; a new instance of that name continues it', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const input = cold('s-a-b-c|', {
        s: snapshot([held('c1', 3)]),
        a: on(event('instance-deleted', 'c1', 4), 11),
        b: on(event('instance-stopped', 'c1', 3), 12),
        c: on(event('instance-created', 'c1', 5), 13),
      });
      expectObservable(merged(input)).toBe('s-a---c|', {
        s: 'state:default/c1@10',
        a: 'deleted c1#4 -> gone, missed 0',
        c: 'created c1#5 -> 5:instance-created, missed 0',
      });
    });
  });

  it('a delete marker in the snapshot is a sequence: the name continues from it', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const input = cold('s-a-b|', {
        s: snapshot([], [{ project: 'default', name: 'c9', seq: 7 }]),
        a: on(event('instance-deleted', 'c9', 7), 10),
        b: on(event('instance-created', 'c9', 8), 11),
      });
      expectObservable(merged(input)).toBe('s---b|', { s: 'state:@10', b: 'created c9#8 -> 8:instance-created, missed 0' });
    });
  });

  it('a rename moves the instance from its old name; a failed read moves the sequence on and keeps the record', () => {
    const ts = newScheduler();
    const updates: FleetUpdate[] = [];
    ts.run(({ cold, expectObservable }) => {
      const input = cold('s-a-b|', {
        s: snapshot([held('old', 2)]),
        a: on(event('instance-renamed', 'new', 1, { old_name: 'old' }), 11),
        b: on(event('instance-updated', 'new', 2, { status: 'failed', error: 'enricher/read', enriched: [], instance: undefined }), 12),
      });
      const out = input.pipe(mergeFleet());
      out.subscribe((u) => updates.push(u));
      expectObservable(out.pipe(map(summary))).toBe('s-a-b|', {
        s: 'state:default/old@10',
        a: 'renamed new#1 -> 1:instance-renamed, missed 0',
        b: 'updated new#2 -> 2:instance-renamed, missed 0',
      });
    });
    const renamed = updates[1] as Extract<FleetUpdate, { kind: 'change' }>;
    expect(renamed.previous?.name).toBe('old');
    const failed = updates[2] as Extract<FleetUpdate, { kind: 'change' }>;
    expect(failed.instance?.event.instance?.running).toBe(true);
  });

  it('leaves out what is not the fleet: other kinds, and events without a sequence', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable }) => {
      const input = cold('s-a-b|', {
        s: snapshot([]),
        a: on({ ...event('network-updated', 'br0', undefined), kind: 'network', instance: undefined, enriched: [] }, 11),
        b: on(event('instance-started', 'c1', undefined), 12),
      });
      expectObservable(merged(input)).toBe('s----|', { s: 'state:@10' });
    });
  });

  it('keeps a view per subscription, passes errors on, and unsubscribes its source', () => {
    const ts = newScheduler();
    ts.run(({ cold, expectObservable, expectSubscriptions }) => {
      const input = cold('s-a-#', { s: snapshot([held('c1', 1)]), a: on(event('instance-stopped', 'c1', 2), 11) });
      const out = merged(input);
      expectObservable(out).toBe('s-a-#', { s: 'state:default/c1@10', a: 'stopped c1#2 -> 2:instance-stopped, missed 0' });
      expectObservable(out, '---!').toBe('s-a-', { s: 'state:default/c1@10', a: 'stopped c1#2 -> 2:instance-stopped, missed 0' });
      expectSubscriptions(input.subscriptions).toBe(['^---!', '^--!']);
    });
  });

  it('the state it emits is the consumer’s own copy', () => {
    const ledger = new FleetLedger();
    const first = ledger.apply(snapshot([held('c1', 1)]));
    ledger.apply(on(event('instance-deleted', 'c1', 2), 11));
    expect(first?.kind === 'state' && first.instances.has('default/c1')).toBe(true);
    expect(ledger.size).toBe(0);
  });
});
