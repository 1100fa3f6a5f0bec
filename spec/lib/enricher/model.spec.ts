import { IncusInstance, IncusInstanceState } from '../../../lib/incus/api';
import { Archive } from '../../../lib/enricher/pipeline/Archive';
import { awaitingAddress, distillInstance, isIncomplete } from '../../../lib/enricher/model/distillInstance';
import {
  EnrichedEvent,
  eventsEqual,
  kindOf,
  newEvent,
  withDropped,
  withFailed,
  withInstance,
  withNetwork,
  withProject,
} from '../../../lib/enricher/model/event';
import { FleetModel } from '../../../lib/enricher/model/FleetModel';
import { InstanceRecord, NetworkRecord, isTrue, networkRecord } from '../../../lib/enricher/model/records';
import {
  ENRICHER_OWN_WANTS,
  Enrichment,
  daemonWanted,
  enrichmentBits,
  enrichmentNames,
  unionWants,
  wants,
} from '../../../lib/enricher/model/wanted';

const br0: NetworkRecord = { name: 'br0', project: 'default', managed: true, type: 'bridge', ipv4: '10.0.0.1/24', ipv6: '' };
const ovn: NetworkRecord = { name: 'ovn1', project: 'p2', managed: true, type: 'ovn', ipv4: '10.5.0.1/24', ipv6: '' };

function instance(overrides: Partial<IncusInstance> = {}): IncusInstance {
  return {
    name: 'c1',
    project: 'default',
    type: 'container',
    status: 'Running',
    status_code: 103,
    config: { 'volatile.eth-1.hwaddr': '00:16:3E:AA:BB:CC', 'user.role': 'web', 'volatile.eth-1.name': 'eth0' },
    devices: {},
    expanded_devices: { 'eth-1': { type: 'nic', network: 'br0' }, root: { type: 'disk', path: '/' } },
    expanded_config: {
      'volatile.eth-1.hwaddr': '00:16:3E:AA:BB:CC',
      'volatile.eth-1.name': 'eth0',
      'user.role': 'web',
      'cloud-init.user-data': '#cloud-config\npassword: hunter2',
      'limits.cpu': '2',
    },
    profiles: ['default'],
    location: 'none',
    ...overrides,
  };
}

function state(addresses: Array<{ family: string; address: string; scope: string }>, hwaddr = '00:16:3e:aa:bb:cc'): IncusInstanceState {
  return {
    status: 'Running',
    status_code: 103,
    network: {
      lo: { type: 'loopback', addresses: [{ family: 'inet', address: '127.0.0.1', netmask: '8', scope: 'local' }] },
      eth0: { type: 'broadcast', hwaddr, addresses: addresses.map((a) => ({ ...a, netmask: '24' })) },
    },
    processes: 3,
  };
}

const lookup = (nets: NetworkRecord[]) => (project: string, name: string) => nets.find((n) => n.project === project && n.name === name);

describe('wanted actions', () => {
  it('unions wants: enrichment ORs, debounce ANDs, the first want of an action is the base', () => {
    const table = unionWants(
      [{ action: 'instance-updated', enrich: Enrichment.instance, debounce: true }],
      [
        { action: 'instance-updated', enrich: Enrichment.project, debounce: false },
        { action: 'network-updated', enrich: 0, debounce: true },
      ],
      [{ action: 'network-updated', enrich: Enrichment.network, debounce: true }],
    );
    expect(table.get('instance-updated')).toEqual({
      action: 'instance-updated',
      enrich: Enrichment.instance | Enrichment.project,
      debounce: false,
    });
    expect(table.get('network-updated')).toEqual({ action: 'network-updated', enrich: Enrichment.network, debounce: true });
    expect(wants(table, 'instance-updated', Enrichment.instance | Enrichment.project)).toBe(true);
    expect(wants(table, 'instance-updated', Enrichment.interfaces)).toBe(false);
    expect(wants(table, 'instance-started', 0)).toBe(false);
  });

  it("the daemon table holds the consumer's wants and the enricher's own (profile updates collapse, deletes never)", () => {
    const table = daemonWanted();
    for (const own of ENRICHER_OWN_WANTS) expect(table.has(own.action)).toBe(true);
    expect(table.get('profile-updated')?.debounce).toBe(true);
    expect(table.get('profile-deleted')?.debounce).toBe(false);
    expect(table.get('instance-started')?.enrich).toBe(Enrichment.instance | Enrichment.interfaces | Enrichment.project);
    expect(table.get('network-updated')?.enrich).toBe(Enrichment.network);
    // A consumer that vetoes collapsing profile updates wins over the enricher's own want.
    expect(daemonWanted([{ action: 'profile-updated', enrich: 0, debounce: false }]).get('profile-updated')?.debounce).toBe(false);
  });

  it('enrichment names and bits round-trip', () => {
    expect(enrichmentNames(enrichmentBits(['project', 'instance']))).toEqual(['instance', 'project']);
  });
});

describe('the event and its structural equality', () => {
  const record: InstanceRecord = {
    type: 'container',
    status: 'Running',
    running: true,
    location: 'none',
    profiles: ['default'],
    config: { 'user.role': 'web' },
    interfaces: [{ name: 'eth0', device: 'eth0', project: 'default', network: 'br0', managed: true, ipv4: ['10.0.0.5'], ipv6: [] }],
    networks: { 'default/br0': br0 },
  };
  const base = (over: Partial<Parameters<typeof newEvent>[0]> = {}): EnrichedEvent =>
    newEvent({ action: 'instance-updated', project: 'default', name: 'c1', origin: 'incus', received: 1, ...over });

  it("names the kind by the action's prefix", () => {
    expect(['instance-started', 'network-updated', 'profile-deleted', 'project-created', 'image-created'].map(kindOf)).toEqual([
      'instance',
      'network',
      'profile',
      'project',
      'other',
    ]);
  });

  it('leaves out when it was received, the server timestamp and the origin', () => {
    expect(eventsEqual(base({ received: 1, timestamp: 'a' }), base({ received: 2, timestamp: 'b', origin: 'round' }))).toBe(true);
  });

  it("keeps the action, names, project and the status (not the reason's wording)", () => {
    expect(eventsEqual(base(), base({ action: 'instance-stopped' }))).toBe(false);
    expect(eventsEqual(base(), base({ action: 'instance-stopped' }), { ignoreAction: true })).toBe(true);
    expect(eventsEqual(base(), base({ name: 'c2' }))).toBe(false);
    expect(eventsEqual(base(), base({ project: 'p2' }))).toBe(false);
    expect(eventsEqual(base({ oldName: 'x' }), base())).toBe(false);
    expect(eventsEqual(withFailed(base(), 'a'), withFailed(base(), 'b'))).toBe(true);
    expect(eventsEqual(withFailed(base(), 'a'), base())).toBe(false);
    expect(eventsEqual(withDropped(base(), 'debounce'), withFailed(base(), 'x'))).toBe(false);
  });

  it('a first mark stays: a failed event is not re-marked dropped', () => {
    expect(withDropped(withFailed(base(), READ), 'debounce')).toMatchObject({ status: 'failed', reason: READ });
  });

  it('keeps which enrichments landed: "no networks" differs from "nobody asked"', () => {
    const stopped: InstanceRecord = { ...record, running: false, status: 'Stopped', interfaces: [], networks: {} };
    expect(eventsEqual(withInstance(base(), stopped), base())).toBe(false);
    expect(eventsEqual(withProject(base(), {}), base())).toBe(false);
    expect(eventsEqual(withProject(base(), {}), withProject(base(), {}))).toBe(true);
    expect(eventsEqual(withProject(base(), { a: '1' }), withProject(base(), { a: '2' }))).toBe(false);
  });

  it('compares the instance field by field: config, interfaces in order with their addresses, networks', () => {
    const same = withInstance(base(), { ...record, config: { ...record.config } });
    expect(eventsEqual(withInstance(base(), record), same)).toBe(true);
    const moved = { ...record, interfaces: [{ ...record.interfaces[0], ipv4: ['10.0.0.6'] }] };
    expect(eventsEqual(withInstance(base(), record), withInstance(base(), moved))).toBe(false);
    const rewired = { ...record, networks: { 'default/br0': { ...br0, ipv4: '10.0.9.1/24' } } };
    expect(eventsEqual(withInstance(base(), record), withInstance(base(), rewired))).toBe(false);
    const relabelled = { ...record, config: { 'user.role': 'db' } };
    expect(eventsEqual(withInstance(base(), record), withInstance(base(), relabelled))).toBe(false);
    expect(eventsEqual(withNetwork(base(), br0), withNetwork(base(), { ...br0, managed: false }))).toBe(false);
  });
});
const READ = 'enricher/read';

describe('distilling an instance', () => {
  it('finds the NIC by hardware address (the device key naming nothing the guest sees), strips volatile and excluded keys, keeps global addresses sorted', () => {
    const result = distillInstance(
      instance(),
      state([
        { family: 'inet', address: '10.0.0.9', scope: 'global' },
        { family: 'inet', address: '10.0.0.5', scope: 'global' },
        { family: 'inet6', address: 'fe80::1', scope: 'link' },
        { family: 'inet6', address: 'fd00::5', scope: 'global' },
      ]),
      lookup([br0]),
      { configExclude: ['cloud-init.'] },
    );
    expect(result).toEqual({
      type: 'container',
      status: 'Running',
      running: true,
      location: 'none',
      profiles: ['default'],
      config: { 'limits.cpu': '2', 'user.role': 'web' },
      interfaces: [
        {
          name: 'eth0',
          device: 'eth-1',
          project: 'default',
          network: 'br0',
          managed: true,
          ipv4: ['10.0.0.5', '10.0.0.9'],
          ipv6: ['fd00::5'],
        },
      ],
      networks: { 'default/br0': br0 },
    });
  });

  it('falls back to the name Incus recorded for the NIC, then to the device key', () => {
    const byName = distillInstance(instance(), state([], 'ff:ff:ff:ff:ff:ff'), lookup([br0]));
    expect(isIncomplete(byName) ? byName : byName.interfaces.map((i) => i.device)).toEqual(['eth-1']);
    const plain = instance({
      config: {},
      expanded_config: {},
      expanded_devices: { eth0: { type: 'nic', parent: 'br0', nictype: 'bridged' } },
    });
    const byKey = distillInstance(plain, state([], 'ff:ff:ff:ff:ff:ff'), lookup([br0]));
    expect(isIncomplete(byKey) ? byKey : byKey.interfaces.map((i) => `${i.device}:${i.network}`)).toEqual(['eth0:br0']);
  });

  it("resolves the network in the instance's own project first, then in default", () => {
    const inP2 = instance({ project: 'p2', expanded_devices: { 'eth-1': { type: 'nic', network: 'ovn1' } } });
    const own = distillInstance(inP2, state([]), lookup([br0, ovn]));
    expect(isIncomplete(own) ? own : Object.keys(own.networks)).toEqual(['p2/ovn1']);
    const shared = distillInstance(instance({ project: 'p2' }), state([]), lookup([br0, ovn]));
    expect(isIncomplete(shared) ? shared : Object.keys(shared.networks)).toEqual(['default/br0']);
  });

  it('an interface on a network nobody has read makes the whole answer incomplete: no subset is kept', () => {
    expect(distillInstance(instance(), state([]), lookup([]))).toEqual({ incomplete: true, network: 'br0' });
  });

  it('a stopped instance has no interfaces and is complete; it is not awaiting an address', () => {
    const stopped = instance({ status: 'Stopped', status_code: 102 });
    const st: IncusInstanceState = { status: 'Stopped', status_code: 102, network: null };
    const result = distillInstance(stopped, st, lookup([]));
    expect(result).toMatchObject({ running: false, interfaces: [] });
    expect(isIncomplete(result) ? true : awaitingAddress(stopped, st, result)).toBe(false);
  });

  it('a running instance with a NIC and no global address is awaiting one', () => {
    const st = state([{ family: 'inet6', address: 'fe80::1', scope: 'link' }]);
    const result = distillInstance(instance(), st, lookup([br0]));
    expect(isIncomplete(result) ? result : awaitingAddress(instance(), st, result)).toBe(true);
  });

  it('a virtual machine without its agent is placed from its NIC devices, with a static address when set, and never awaited', () => {
    const vm = instance({
      type: 'virtual-machine',
      expanded_devices: { eth0: { type: 'nic', network: 'br0', 'ipv4.address': '10.0.0.50' } },
    });
    const st: IncusInstanceState = { status: 'Running', status_code: 103, network: null, processes: -1 };
    const result = distillInstance(vm, st, lookup([br0]));
    expect(isIncomplete(result) ? result : result.interfaces.map((i) => i.ipv4)).toEqual([['10.0.0.50']]);
    expect(isIncomplete(result) ? true : awaitingAddress(vm, st, result)).toBe(false);
  });
});

describe('the fleet model', () => {
  it('counts what it holds, knows owners, finds instances by wire and by profile, and is dirty after every write', () => {
    const model = new FleetModel();
    expect(model.dirty).toBe(false);
    model.setProjectConfig('p2', { 'features.networks': 'yes' });
    model.setProjectConfig('p3', { 'features.profiles': 'true' });
    model.setNetwork(br0);
    model.setNetwork(ovn);
    const on = (net: NetworkRecord, profiles: string[]): InstanceRecord => ({
      type: 'container',
      status: 'Running',
      running: true,
      location: '',
      profiles,
      config: {},
      interfaces: [{ name: 'eth0', device: 'eth0', project: net.project, network: net.name, managed: true, ipv4: [], ipv6: [] }],
      networks: { [`${net.project}/${net.name}`]: net },
    });
    model.setInstance('default', 'a', on(br0, ['default', 'web']));
    model.setInstance('p2', 'b', on(ovn, ['web']));
    model.setInstance('p3', 'c', on(br0, ['web']));
    expect([model.projectCount, model.instanceCount, model.networkCount]).toEqual([3, 3, 2]);
    expect(model.networkOwner('p2')).toBe('p2');
    expect(model.networkOwner('p3')).toBe('default');
    expect(model.resolveNetwork('p3', 'br0')).toBe(br0);
    expect(model.instancesOn('default', 'br0').sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { project: 'default', name: 'a' },
      { project: 'p3', name: 'c' },
    ]);
    // p3 has its own profiles: default's "web" is not the one c uses.
    const byKey = (a: { project: string; name: string }, b: { project: string; name: string }): number =>
      `${a.project}/${a.name}`.localeCompare(`${b.project}/${b.name}`);
    expect(model.instancesUsingProfile('default', 'web').sort(byKey)).toEqual([
      { project: 'default', name: 'a' },
      { project: 'p2', name: 'b' },
    ]);
    expect(model.setInstance('default', 'a', on(br0, ['default', 'web']))).toBe(false);
    model.dirty = false;
    expect(model.deleteProject('p2')).toEqual(['b']);
    expect([model.dirty, model.instanceCount, model.networkCount]).toEqual([true, 2, 1]);
    expect(model.projectConfig('nope')).toBeUndefined();
    expect(model.hasProject('nope')).toBe(false);
  });

  it('treats 1, yes, true and on as true, whatever their case', () => {
    expect(['1', 'YES', 'true', 'On', 'false', '0', '', undefined].map(isTrue)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
    ]);
  });

  it('a network record carries the configured gateway of a managed network only, and none/auto as nothing', () => {
    expect(
      networkRecord(
        { name: 'x', type: 'bridge', managed: true, config: { 'ipv4.address': 'auto', 'ipv6.address': 'fd00::1/64' } },
        'default',
      ),
    ).toEqual({
      name: 'x',
      project: 'default',
      managed: true,
      type: 'bridge',
      ipv4: '',
      ipv6: 'fd00::1/64',
    });
    expect(
      networkRecord({ name: 'eth0', type: 'physical', managed: false, config: { 'ipv4.address': '1.2.3.4/24' }, project: 'p9' }, 'default'),
    ).toMatchObject({
      project: 'p9',
      ipv4: '',
    });
  });
});

describe('the archive', () => {
  const ev = (action: string, v: string, origin: 'incus' | 'round' = 'incus'): EnrichedEvent =>
    withProject(newEvent({ action, project: 'default', name: 'c1', origin, received: 0 }), { v });

  it('says the first event about a subject is new, a repeat is not, and forgets on request', () => {
    const archive = new Archive();
    expect(archive.changed(ev('instance-updated', '1'))).toBe(true);
    expect(archive.changed(ev('instance-updated', '1'))).toBe(false);
    expect(archive.changed(ev('instance-stopped', '1'))).toBe(true);
    expect(archive.changed(ev('instance-updated', '1', 'round'))).toBe(false);
    expect(archive.changed(ev('instance-updated', '2', 'round'))).toBe(true);
    archive.forget('default', 'c1');
    expect(archive.changed(ev('instance-updated', '2'))).toBe(true);
    archive.forgetProject('default');
    expect(archive.size).toBe(0);
  });
});
