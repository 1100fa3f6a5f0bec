import { ReadResult } from '@rxfleet/operators';
import { IncusNetwork, IncusProject } from '../../../lib/incus/api';
import { parseInstancesServed } from '../../../lib/enricher/model/instancesServed';
import { parseProjectsServed } from '../../../lib/enricher/model/servedProjects';
import { networkRecord } from '../../../lib/enricher/model/records';
import { landInstance, landNetwork, landProject, landRead } from '../../../lib/enricher/owner/landings';
import { LineEntry } from '../../../lib/enricher/owner/lineEntry';
import { OwnerView } from '../../../lib/enricher/owner/ownerState';
import { InstanceRead, InstanceResult, NetworkRead, ProjectRead } from '../../../lib/enricher/owner/requests';
import { Stamped } from '../../../lib/enricher/reads/readRequests';
import { RoundContext } from '../../../lib/enricher/rounds/round';
import { event, instanceRead, lines, modelWithBridge, networkRead, notFound, ownerView, projectRead, runningOn } from './decisions';

// The landings are pure: each case is a view and a result in, effects and settlements out, as
// lines (`decisions.ts`). The owner carries the effects out in order, then the settlements.

const answered = <T, A>(key: string, requests: T[], answer: A, readAt = 7): ReadResult<T, string, Stamped<A>> => ({
  status: 'answered',
  key,
  requests,
  value: { answer, readAt },
});
const failed = <T>(key: string, requests: T[], error: unknown) =>
  ({ status: 'failed', key, requests, error }) as ReadResult<T, string, never>;
const cancelled = <T>(key: string, requests: T[]): ReadResult<T, string, never> => ({ status: 'cancelled', key, requests });

const updated = event('instance-updated', 'default', 'c1');
const started = event('instance-started', 'default', 'c1');
const fanOut = event('instance-updated', 'default', 'c1', 'fan-out');

describe('landInstance: an instance read landed', () => {
  interface Case {
    name: string;
    view?: Partial<OwnerView>;
    requests: InstanceRead[];
    result: (requests: InstanceRead[]) => InstanceResult;
    afterNetworkRead?: boolean;
    effects: string[];
    settlements: string[];
  }
  const KEY = 'ins/default/c1';
  const cases: Case[] = [
    {
      name: 'stored: the record is stored, the TTL owed, each event answered in arrival order, the invented one pushed behind',
      requests: [instanceRead(3, fanOut, false), instanceRead(2, started), instanceRead(1, updated)],
      result: (r) => answered(KEY, r, runningOn('c1', 'br0', '10.0.0.5')),
      effects: ['store-instance default/c1 @10.0.0.5', `owe ${KEY} ttl`],
      settlements: [
        'place of instance-updated: instance-updated default/c1 @10.0.0.5 +p readAt 7',
        'place of instance-started: instance-started default/c1 @10.0.0.5 +p readAt 7',
        'push: instance-updated default/c1 @10.0.0.5 +p (fan-out) readAt 7',
      ],
    },
    {
      name: 'running without an address (E11): stored, and a repair that backs off is owed',
      requests: [instanceRead(1, updated)],
      result: (r) => answered(KEY, r, runningOn('c1', 'br0')),
      effects: ['store-instance default/c1 @-', `owe ${KEY} address`],
      settlements: ['place of instance-updated: instance-updated default/c1 @- +p readAt 7'],
    },
    {
      name: 'failed: nothing stored, a repair owed, the event fails',
      requests: [instanceRead(1, updated), instanceRead(2, fanOut, false)],
      result: (r) => failed(KEY, r, new Error('boom')),
      effects: ['log debug: instance read failed: reading it again soon', `owe ${KEY} repair`],
      settlements: ['place of instance-updated: instance-updated default/c1 [failed]'],
    },
    {
      name: 'gone (404): nothing owed, the event goes out bare (its delete, or a prune, says it)',
      requests: [instanceRead(1, updated)],
      result: (r) => failed(KEY, r, notFound()),
      effects: [`owe ${KEY} nothing`],
      settlements: ['place of instance-updated: instance-updated default/c1'],
    },
    {
      name: 'cancelled: the events go out as they arrived, nothing else happens',
      requests: [instanceRead(1, updated)],
      result: (r) => cancelled(KEY, r),
      effects: [],
      settlements: ['place of instance-updated: instance-updated default/c1'],
    },
    {
      name: 'asked for before a delete of the key (E7): stale, bare, nothing stored; a read asked after it is answered',
      view: { deletedAt: new Map([[KEY, 5]]) },
      requests: [instanceRead(4, updated), instanceRead(6, started)],
      result: (r) => answered(KEY, r, runningOn('c1', 'br0', '10.0.0.5')),
      effects: ['store-instance default/c1 @10.0.0.5', `owe ${KEY} ttl`],
      settlements: [
        'place of instance-updated: instance-updated default/c1',
        'place of instance-started: instance-started default/c1 @10.0.0.5 +p readAt 7',
      ],
    },
    {
      name: 'every read stale: nothing stored, nothing owed',
      view: { deletedAt: new Map([[KEY, 5]]) },
      requests: [instanceRead(4, updated), instanceRead(3, fanOut, false)],
      result: (r) => answered(KEY, r, runningOn('c1', 'br0', '10.0.0.5')),
      effects: [],
      settlements: ['place of instance-updated: instance-updated default/c1'],
    },
    {
      name: 'its project known not to be served (E6): the events go nowhere, nothing stored',
      view: { projects: parseProjectsServed('user.rxfleet'), unserved: new Set(['default']) },
      requests: [instanceRead(1, updated)],
      result: (r) => answered(KEY, r, runningOn('c1', 'br0', '10.0.0.5')),
      effects: [],
      settlements: ['place of instance-updated: instance-updated default/c1 unserved-project'],
    },
    {
      name: 'not served by the instance filter: it leaves the model, nothing owed, each event leaves bare, the invented one too',
      view: { instances: parseInstancesServed(['user.role=db']) },
      requests: [instanceRead(1, updated), instanceRead(2, fanOut, false)],
      result: (r) => answered(KEY, r, { ...runningOn('c1', 'br0', '10.0.0.5'), served: false }),
      effects: ['drop-instance default/c1', `owe ${KEY} nothing`],
      settlements: [
        'place of instance-updated: instance-updated default/c1 unserved',
        'push: instance-updated default/c1 (fan-out) unserved',
      ],
    },
    {
      name: 'on a network not held: the network is read by name, this answer lands again after it, the events wait',
      requests: [instanceRead(1, updated)],
      result: (r) => answered(KEY, r, runningOn('c1', 'br9', '10.9.0.5')),
      effects: [
        'log debug: instance on a network not read yet: reading the network first',
        'read-network default/br9 as default if-changed, then land again',
      ],
      settlements: [],
    },
    {
      name: 'still on a network not held after reading it: the events fail, both are read again',
      requests: [instanceRead(1, updated)],
      result: (r) => answered(KEY, r, runningOn('c1', 'br9', '10.9.0.5')),
      afterNetworkRead: true,
      effects: [
        'log debug: instance on a network not read yet: reading both again',
        'read-network default/br9 as default if-changed',
        `owe ${KEY} repair`,
      ],
      settlements: ['place of instance-updated: instance-updated default/c1 [failed]'],
    },
  ];

  it.each(cases)('$name', ({ view, requests, result, afterNetworkRead, effects, settlements }) => {
    expect(lines(landInstance(ownerView(view), result(requests), afterNetworkRead))).toEqual({ effects, settlements });
  });

  it('decides without changing anything: the model, the entries and the view are as they were', () => {
    const view = ownerView();
    const requests = [instanceRead(1, updated)];
    const decision = landInstance(view, answered(KEY, requests, runningOn('c1', 'br0', '10.0.0.5')));
    expect(decision.effects.length).toBeGreaterThan(0);
    expect(view.model.instance('default', 'c1')).toBeUndefined();
    expect(requests[0].entry?.settled).toBe(false);
  });
});

describe('landNetwork: a network read landed', () => {
  const br0 = (ipv4: string): IncusNetwork => ({ name: 'br0', type: 'bridge', managed: true, config: { 'ipv4.address': ipv4 } });
  const updatedNet = event('network-updated', 'default', 'br0');
  const round = new RoundContext(3);
  const withC1 = (): Partial<OwnerView> => {
    const model = modelWithBridge();
    model.setInstance('default', 'c1', {
      type: 'container',
      status: 'Running',
      running: true,
      location: 'none',
      profiles: ['default'],
      config: {},
      interfaces: [{ name: 'eth0', device: 'eth0', project: 'default', network: 'br0', managed: true, ipv4: ['10.0.0.5'], ipv6: [] }],
      networks: { 'default/br0': networkRecord(br0('10.0.0.1/24'), 'default') },
    });
    return { model };
  };
  const followUp = answered(
    'ins/default/c2',
    [instanceRead(1, event('instance-updated', 'default', 'c2'))],
    runningOn('c2', 'br0', '10.0.0.6'),
  );
  interface Case {
    name: string;
    view?: () => Partial<OwnerView>;
    requests: NetworkRead[];
    result: (requests: NetworkRead[]) => ReadResult<NetworkRead, string, Stamped<IncusNetwork>>;
    effects: string[];
    settlements: string[];
  }
  const cases: Case[] = [
    {
      name: 'changed, for an event that wants it (E8): stored, the event travels with it, every instance on the wire read again',
      view: withC1,
      requests: [networkRead(2, 'default', 'br0', { fanOut: 'always', event: updatedNet }), networkRead(1, 'default', 'br0', { round })],
      result: (r) => answered('net/default/br0', r, br0('10.0.9.1/24')),
      effects: ['tell round 3: network landed', 'store-network default/br0 10.0.9.1/24', 'fan-out default/c1'],
      settlements: [],
    },
    {
      name: "a round's read that found nothing new: stored, nobody read again",
      view: withC1,
      requests: [networkRead(1, 'default', 'br0', { round })],
      result: (r) => answered('net/default/br0', r, br0('10.0.0.1/24')),
      effects: ['tell round 3: network landed', 'store-network default/br0 10.0.0.1/24'],
      settlements: [],
    },
    {
      name: 'an event that asked for a fan-out gets one even when nothing changed',
      view: withC1,
      requests: [networkRead(1, 'default', 'br0', { fanOut: 'always' })],
      result: (r) => answered('net/default/br0', r, br0('10.0.0.1/24')),
      effects: ['store-network default/br0 10.0.0.1/24', 'fan-out default/c1'],
      settlements: [],
    },
    {
      name: 'gone (404): the wire is forgotten (what sat on it read again), the event goes out bare',
      requests: [networkRead(1, 'default', 'br0', { fanOut: 'always', event: updatedNet })],
      result: (r) => failed('net/default/br0', r, notFound()),
      effects: ['forget-network default/br0'],
      settlements: [],
    },
    {
      name: 'failed: logged, the waiting instance answer lands again all the same',
      requests: [networkRead(1, 'default', 'br9', { followUp })],
      result: (r) => failed('net/default/br9', r, new Error('boom')),
      effects: ['log debug: network read failed', 'land-instance ins/default/c2'],
      settlements: [],
    },
    {
      name: 'an instance answer waiting on the wire lands again after the wire is stored',
      requests: [networkRead(1, 'default', 'br9', { followUp })],
      result: (r) => answered('net/default/br9', r, { ...br0('10.9.0.1/24'), name: 'br9' }),
      effects: ['store-network default/br9 10.9.0.1/24', 'fan-out -', 'land-instance ins/default/c2'],
      settlements: [],
    },
  ];

  it.each(cases)('$name', ({ view, requests, result, effects }) => {
    expect(lines(landNetwork(ownerView(view?.()), result(requests))).effects).toEqual(effects);
  });

  it('answers each event that waited on the read, in arrival order: with the network, failed, or bare when it is gone', () => {
    const created = event('network-created', 'default', 'br0');
    const placed = [
      networkRead(2, 'default', 'br0', { event: updatedNet, entry: new LineEntry(updatedNet) }),
      networkRead(1, 'default', 'br0', { event: created, entry: new LineEntry(created) }),
    ];
    expect(lines(landNetwork(ownerView(), answered('net/default/br0', placed, br0('10.0.9.1/24')))).settlements).toEqual([
      'place of network-created: network-created default/br0 {10.0.9.1/24}',
      'place of network-updated: network-updated default/br0 {10.0.9.1/24}',
    ]);
    expect(lines(landNetwork(ownerView(), failed('net/default/br0', placed, new Error('boom')))).settlements).toEqual([
      'place of network-created: network-created default/br0 [failed]',
      'place of network-updated: network-updated default/br0 [failed]',
    ]);
    expect(lines(landNetwork(ownerView(), failed('net/default/br0', placed, notFound()))).settlements).toEqual([
      'place of network-created: network-created default/br0',
      'place of network-updated: network-updated default/br0',
    ]);
  });

  it('tells a round abandoned for a newer one nothing', () => {
    const abandoned = new RoundContext(2);
    abandoned.abandoned = true;
    const decision = landNetwork(
      ownerView(),
      answered('net/default/br0', [networkRead(1, 'default', 'br0', { round: abandoned })], br0('10.0.0.1/24')),
    );
    expect(lines(decision).effects).toEqual(['store-network default/br0 10.0.0.1/24']);
  });
});

describe('landProject: a project read landed', () => {
  const project = (config: Record<string, string>): IncusProject => ({ name: 'p1', config });
  const held = (): Partial<OwnerView> => {
    const model = modelWithBridge();
    model.setProjectConfig('p1', { 'user.team': 'a' });
    model.setInstance('p1', 'c7', {
      type: 'container',
      status: 'Stopped',
      running: false,
      location: 'none',
      profiles: [],
      config: {},
      interfaces: [],
      networks: {},
    });
    return { model };
  };
  const round = new RoundContext(4);
  interface Case {
    name: string;
    view?: () => Partial<OwnerView>;
    result: (requests: ProjectRead[]) => ReadResult<ProjectRead, string, Stamped<IncusProject>>;
    effects: string[];
  }
  const cases: Case[] = [
    {
      name: 'served, its labels changed: stored, the parked reads asked for, its instances read again so each says so',
      view: held,
      result: (r) => answered('prj/p1/', r, project({ 'user.team': 'b' })),
      effects: [
        'project-read-landed p1',
        'project-served p1 {"user.team":"b"}',
        'parked p1 go read',
        'fan-out p1/c7',
        'tell round 4: project p1 served',
      ],
    },
    {
      name: 'served, unchanged: nobody read again',
      view: held,
      result: (r) => answered('prj/p1/', r, project({ 'user.team': 'a' })),
      effects: ['project-read-landed p1', 'project-served p1 {"user.team":"a"}', 'parked p1 go read', 'tell round 4: project p1 served'],
    },
    {
      name: 'not served (a marker it lacks, E6) and held: it takes its instances out as deletes (E4), the parked reads go nowhere',
      view: () => ({ ...held(), projects: parseProjectsServed('user.rxfleet') }),
      result: (r) => answered('prj/p1/', r, project({ 'user.team': 'a' })),
      effects: [
        'project-read-landed p1',
        'project-unserved p1',
        'log info: project no longer served: its instances leave as deletes',
        'prune-project p1',
        'parked p1 go nowhere',
        'tell round 4: project p1 unserved',
      ],
    },
    {
      name: 'not served and already known so: nothing to take out again',
      view: () => ({ ...held(), projects: parseProjectsServed('user.rxfleet'), unserved: new Set(['p1']) }),
      result: (r) => answered('prj/p1/', r, project({})),
      effects: ['project-read-landed p1', 'project-unserved p1', 'parked p1 go nowhere', 'tell round 4: project p1 unserved'],
    },
    {
      name: 'gone (404): pruned, the parked reads asked for (they find their instances gone)',
      view: held,
      result: (r) => failed('prj/p1/', r, notFound()),
      effects: ['project-read-landed p1', 'prune-project p1', 'parked p1 go read', 'tell round 4: project p1 gone'],
    },
    {
      name: 'failed: never pruned on a failed read; the round goes on with the configuration held',
      view: held,
      result: (r) => failed('prj/p1/', r, new Error('boom')),
      effects: ['project-read-landed p1', 'log debug: project read failed', 'parked p1 go read', 'tell round 4: project p1 failed'],
    },
  ];

  it.each(cases)('$name', ({ view, result, effects }) => {
    const decision = landProject(ownerView(view?.()), result([projectRead(1, 'p1', round)]));
    expect(lines(decision)).toEqual({ effects, settlements: [] });
  });

  it("tells the round the configuration it goes on with, and the round learns the project's networks from it", () => {
    const told = new RoundContext(5);
    told.expectProjects(1);
    const decision = landProject(ownerView(), answered('prj/p1/', [projectRead(1, 'p1', told)], project({ 'features.networks': 'true' })));
    expect(decision.effects.at(-1)).toEqual({
      kind: 'tell-round',
      round: told,
      landed: 'project',
      project: 'p1',
      outcome: { status: 'served', config: { 'features.networks': 'true' } },
    });
  });
});

describe('landRead', () => {
  it('decides by the kind of the read, and a result with no request decides nothing', () => {
    const view = ownerView();
    const instance = answered('ins/default/c1', [instanceRead(1, updated)], runningOn('c1', 'br0', '10.0.0.5'));
    expect(landRead(view, instance)).toEqual(landInstance(view, instance as InstanceResult));
    const none = failed('ins/default/c1', [], new Error('boom'));
    expect(landRead(view, none)).toEqual({ effects: [], settlements: [] });
  });
});
