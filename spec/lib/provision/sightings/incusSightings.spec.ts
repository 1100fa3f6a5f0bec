import { EventPayload, InstancePayload } from '../../../../lib/enricher/output/payload';
import { parseInstancesServed } from '../../../../lib/enricher/model/instancesServed';
import { parseProjectsServed } from '../../../../lib/enricher/model/servedProjects';
import { parseIdentityTemplate } from '../../../../lib/provision/sightings/incusIdentity';
import { IncusDecision, incusSightings } from '../../../../lib/provision/sightings/incusSightings';
import { newScheduler } from '../../../helpers/marbles';

/** An instance as the enricher publishes it: running with `ipv4`/`ipv6` on eth0, or not running. */
function instance(options: { running?: boolean; ipv4?: string[]; ipv6?: string[]; config?: Record<string, string> } = {}): InstancePayload {
  const running = options.running ?? true;
  return {
    type: 'container',
    status: running ? 'Running' : 'Stopped',
    running,
    location: 'none',
    profiles: ['default'],
    config: options.config ?? {},
    interfaces: [
      {
        name: 'eth0',
        device: 'eth0',
        project: 'default',
        network: 'br0',
        managed: true,
        ipv4: options.ipv4 ?? [],
        ipv6: options.ipv6 ?? [],
      },
    ],
    networks: {},
  };
}

function event(action: string, name: string, extra: Partial<EventPayload> = {}): EventPayload {
  return {
    version: 1,
    action,
    kind: 'instance',
    project: 'default',
    name,
    status: 'ok',
    origin: 'incus',
    received: '2026-01-01T00:00:00.000Z',
    enriched: [],
    project_config: {},
    ...extra,
  };
}

const up = (action: string, name: string, extra: Partial<EventPayload> = {}): EventPayload =>
  event(action, name, { instance: instance({ ipv4: ['10.0.0.5'] }), ...extra });
const noAddress = (action: string, name: string): EventPayload => event(action, name, { instance: instance() });
const stopped = (action: string, name: string): EventPayload => event(action, name, { instance: instance({ running: false }) });
/** Frozen, as Incus and LXD report a paused instance: not running, status `Frozen`, its addresses kept. */
const frozen = (action: string, name: string, ipv4 = ['10.0.0.5'], extra: Partial<EventPayload> = {}): EventPayload =>
  event(action, name, { instance: { ...instance({ ipv4 }), running: false, status: 'Frozen' }, ...extra });

const everything = {
  projects: parseProjectsServed(undefined),
  instances: parseInstancesServed(undefined),
  identity: parseIdentityTemplate('{name}'),
};

/** Runs `events` through the operator at once, returning what it emitted and every decision's `name result`. */
function decide(events: EventPayload[], feed = everything): { sighted: string[]; decisions: string[] } {
  const sighted: string[] = [];
  const decisions: string[] = [];
  const onDecision = (d: IncusDecision): number => decisions.push(`${d.name} ${d.result}${d.reason !== undefined ? `: ${d.reason}` : ''}`);
  newScheduler().run(({ cold }) => {
    const values = Object.fromEntries(events.map((e, i) => [String.fromCharCode(97 + i), e]));
    cold(Object.keys(values).join('') + '|', values)
      .pipe(incusSightings({ feed, onDecision }))
      .subscribe((identity) => sighted.push(identity));
  });
  return { sighted, decisions };
}

describe('incusSightings', () => {
  it('sights an instance the moment an event shows it running with an address, in marble time, and passes the rest over', () => {
    const scheduler = newScheduler();
    scheduler.run(({ cold, expectObservable, expectSubscriptions }) => {
      const events = cold('a-b-c-d|', {
        a: event('instance-created', 'web1', { instance: instance({ running: false }) }),
        b: up('instance-started', 'web1'),
        c: { ...up('network-updated', 'br0'), kind: 'network' as const },
        d: up('instance-started', 'web2', { project: 'p2' }),
      });
      expectObservable(events.pipe(incusSightings({ feed: everything }))).toBe('--b---d|', { b: 'web1', d: 'web2' });
      expectSubscriptions(events.subscriptions).toBe('^------!');
    });
  });

  it('an IPv6 global address is an address too; a running instance without one is not up', () => {
    const ipv6 = event('instance-started', 'v6', { instance: instance({ ipv6: ['fd42::5'] }) });
    expect(decide([ipv6, noAddress('instance-started', 'bare')])).toEqual({ sighted: ['v6'], decisions: ['v6 sighted', 'bare not_up'] });
  });

  it('a start without an address is sighted by the update that brings it (a repair, a late lease), once', () => {
    const { sighted, decisions } = decide([
      noAddress('instance-started', 'c1'),
      up('instance-updated', 'c1', { origin: 'repair' }),
      up('instance-updated', 'c1'),
    ]);
    expect(sighted).toEqual(['c1']);
    expect(decisions).toEqual(['c1 not_up', 'c1 sighted', 'c1 already_up']);
  });

  it("an update about an instance never seen is a running fleet announced (the enricher's first round), not a start", () => {
    const { sighted, decisions } = decide([up('instance-updated', 'old', { origin: 'round' }), up('instance-updated', 'old')]);
    expect(sighted).toEqual([]);
    expect(decisions).toEqual(['old already_up', 'old already_up']);
  });

  it('sights every boot: a stop then a start, a restart', () => {
    const events = [
      up('instance-updated', 'c1', { origin: 'round' }),
      stopped('instance-stopped', 'c1'),
      up('instance-started', 'c1'),
      up('instance-restarted', 'c1'),
    ];
    expect(decide(events)).toEqual({ sighted: ['c1', 'c1'], decisions: ['c1 already_up', 'c1 not_up', 'c1 sighted', 'c1 sighted'] });
  });

  it('a pause is not a boot: a frozen instance resumed (and the updates around it) is already up, never sighted', () => {
    const events = [
      up('instance-started', 'c1'),
      frozen('instance-paused', 'c1'),
      frozen('instance-updated', 'c1'),
      up('instance-resumed', 'c1'),
      up('instance-updated', 'c1'),
      // Paused while never seen before (the enricher started on a paused instance): a resume is not a boot either.
      frozen('instance-updated', 'c2', undefined, { origin: 'round' }),
      up('instance-resumed', 'c2'),
    ];
    expect(decide(events)).toEqual({
      sighted: ['c1'],
      decisions: ['c1 sighted', 'c1 not_up', 'c1 not_up', 'c1 already_up', 'c1 already_up', 'c2 not_up', 'c2 already_up'],
    });
  });

  it('an instance paused while still booting comes up when it gains its first address after the resume, once', () => {
    const events = [
      noAddress('instance-started', 'c1'),
      frozen('instance-paused', 'c1', []),
      noAddress('instance-resumed', 'c1'),
      up('instance-updated', 'c1'),
    ];
    expect(decide(events)).toEqual({ sighted: ['c1'], decisions: ['c1 not_up', 'c1 not_up', 'c1 not_up', 'c1 sighted'] });
  });

  // The rule per lifecycle action, as docs/provisioner/incus-feed.md tables it: what each action
  // decides for an instance last seen up (running with an address) and last seen stopped.
  it.each([
    // action, instance in the event, after up, after stopped
    ['instance-created', 'stopped', 'not_up', 'not_up'],
    ['instance-started', 'up', 'sighted', 'sighted'],
    ['instance-restarted', 'up', 'sighted', 'sighted'],
    ['instance-stopped', 'stopped', 'not_up', 'not_up'],
    ['instance-shutdown', 'stopped', 'not_up', 'not_up'],
    ['instance-paused', 'frozen', 'not_up', 'not_up'],
    ['instance-resumed', 'up', 'already_up', 'sighted'],
    ['instance-updated', 'up', 'already_up', 'sighted'],
    ['instance-renamed', 'up', 'already_up', 'already_up'],
    ['instance-deleted', 'none', 'not_up', 'not_up'],
  ])('%s with the instance %s: %s after up, %s after stopped', (action, shape, afterUp, afterStopped) => {
    const subject =
      shape === 'up'
        ? up(action, 'c1')
        : shape === 'frozen'
          ? frozen(action, 'c1')
          : shape === 'stopped'
            ? stopped(action, 'c1')
            : event(action, 'c1');
    // A rename names the instance anew: its new name was never seen, whatever the old one was.
    const named = action === 'instance-renamed' ? { ...subject, name: 'c1b', old_name: 'c1' } : subject;
    const last = (events: EventPayload[]): string | undefined => decide(events).decisions.at(-1)?.split(' ')[1];
    expect(last([up('instance-started', 'c1'), named])).toBe(afterUp);
    expect(last([up('instance-started', 'c1'), stopped('instance-stopped', 'c1'), named])).toBe(afterStopped);
  });

  it('a delete forgets the instance and a rename its old name: an update after either is not a start', () => {
    const events = [
      stopped('instance-stopped', 'a'),
      event('instance-deleted', 'a', { enriched: [] }),
      up('instance-updated', 'a'),
      stopped('instance-stopped', 'b'),
      { ...stopped('instance-renamed', 'b2'), old_name: 'b' },
      up('instance-updated', 'b'),
    ];
    expect(decide(events)).toEqual({
      sighted: [],
      decisions: ['a not_up', 'a not_up', 'a already_up', 'b not_up', 'b2 not_up', 'b already_up'],
    });
  });

  it('a failed read says nothing about the instance: its last state stands', () => {
    const failed = event('instance-updated', 'c1', { status: 'failed', error: 'enricher/read' });
    expect(decide([stopped('instance-stopped', 'c1'), failed, up('instance-updated', 'c1')])).toEqual({
      sighted: ['c1'],
      decisions: ['c1 not_up', 'c1 not_up', 'c1 sighted'],
    });
  });

  it('selects by project (a list, or a marker on the project configuration), by label and by name pattern; the rest is unselected', () => {
    const feed = {
      ...everything,
      projects: parseProjectsServed(['default', 'p2']),
      instances: parseInstancesServed(['user.choria=provision', 'web-*']),
    };
    const events = [
      up('instance-started', 'labelled', { instance: instance({ ipv4: ['10.0.0.5'], config: { 'user.choria': 'provision' } }) }),
      up('instance-started', 'web-1', { project: 'p2' }),
      up('instance-started', 'db-1'),
      up('instance-started', 'web-2', { project: 'p3' }),
      up('instance-started', 'wrong-label', { instance: instance({ ipv4: ['10.0.0.5'], config: { 'user.choria': 'no' } }) }),
    ];
    expect(decide(events, feed)).toEqual({
      sighted: ['labelled', 'web-1'],
      decisions: ['labelled sighted', 'web-1 sighted', 'db-1 unselected', 'web-2 unselected', 'wrong-label unselected'],
    });
    const marked = { ...everything, projects: parseProjectsServed('user.choria') };
    const onMarked = [
      up('instance-started', 'm1', { project_config: { 'user.choria': 'yes' } }),
      up('instance-started', 'm2', { project_config: {} }),
      up('instance-started', 'm3', { project_config: undefined }),
    ];
    expect(decide(onMarked, marked).sighted).toEqual(['m1']);
  });

  it('maps each instance through the identity template; one that cannot be mapped is counted unmapped, never sighted', () => {
    const feed = { ...everything, identity: parseIdentityTemplate('{config.user.choria-identity}') };
    const named = up('instance-started', 'c1', {
      instance: instance({ ipv4: ['10.0.0.5'], config: { 'user.choria-identity': 'c1.example.net' } }),
    });
    const unnamed = up('instance-started', 'c2');
    const spaced = up('instance-started', 'c3', { instance: instance({ ipv4: ['10.0.0.5'], config: { 'user.choria-identity': 'c 3' } }) });
    const { sighted, decisions } = decide([named, unnamed, spaced], feed);
    expect(sighted).toEqual(['c1.example.net']);
    expect(decisions).toEqual([
      'c1 sighted',
      'c2 unmapped: its configuration has no user.choria-identity',
      expect.stringMatching(/^c3 unmapped: "c 3" is not a Choria identity/),
    ]);
    const fqdn = { ...everything, identity: parseIdentityTemplate('{name}.{project}.example.net') };
    expect(decide([up('instance-started', 'web1', { project: 'p2' })], fqdn).sighted).toEqual(['web1.p2.example.net']);
  });

  it("keeps rxjs's contract: a decision hook that throws errors the output", () => {
    newScheduler().run(({ cold, expectObservable }) => {
      const boom = (): never => {
        throw new Error('boom');
      };
      expectObservable(cold('a|', { a: up('instance-started', 'c1') }).pipe(incusSightings({ feed: everything, onDecision: boom }))).toBe(
        '#',
        undefined,
        new Error('boom'),
      );
    });
  });
});
