import { EnrichedEvent, newEvent, withFailed } from '../../../lib/enricher/model/event';
import { InstanceRecord } from '../../../lib/enricher/model/records';
import { parseInstancesServed } from '../../../lib/enricher/model/instancesServed';
import { parseProjectsServed } from '../../../lib/enricher/model/servedProjects';
import { OwnerView } from '../../../lib/enricher/owner/ownerState';
import { Place, routeEvent } from '../../../lib/enricher/owner/route';
import { summary } from './harness';
import { effectLine, event, modelWithBridge, ownerView } from './decisions';

// Routing (§3.3 of the reference), decided as a pure function: each case is a view and an event
// in; the event as it goes on, the effects carried out before it takes its place, and the place.

const record = (profiles: string[] = ['default']): InstanceRecord => ({
  type: 'container',
  status: 'Running',
  running: true,
  location: 'none',
  profiles,
  config: {},
  interfaces: [],
  networks: {},
});

/** The default project (read) holding c1 (profile `web`) and c2; project p1 held, its configuration not read yet. */
function fleet(): Partial<OwnerView> {
  const model = modelWithBridge();
  model.setInstance('default', 'c1', record(['default', 'web']));
  model.setInstance('default', 'c2', record());
  model.setInstance('p1', 'c7', record());
  return { model };
}

const renamed = (action: string, name: string, oldName: string): EnrichedEvent =>
  newEvent({ action, project: 'default', name, oldName, origin: 'incus', received: 0 });

function placeLine(place: Place): string {
  switch (place.kind) {
    case 'instance':
      return `instance${place.waitForRunning ? ', wait for running' : ''}${place.wantInterfaces ? ', interfaces' : ''}`;
    case 'network':
      return `network of ${place.owner}${place.attach ? ', attached' : ''}`;
    case 'settled':
      return place.unserved === true ? 'settled, unserved' : 'settled';
    case 'drop':
      return 'drop';
  }
}

interface Case {
  name: string;
  view?: () => Partial<OwnerView>;
  input: EnrichedEvent;
  /** The event as it goes on ({@link summary}). */
  event?: string;
  effects: string[];
  place: string;
}

const cases: Case[] = [
  {
    name: 'an instance event wanting the instance: its project attached, it waits in its place for a read',
    input: event('instance-updated', 'default', 'c1'),
    event: 'instance-updated default/c1 +p',
    effects: [],
    place: 'instance, interfaces',
  },
  {
    name: 'a start waits for running and an address',
    input: event('instance-started', 'default', 'c1'),
    effects: [],
    place: 'instance, wait for running, interfaces',
  },
  {
    name: 'a delete forgets the instance (E7) and takes its place answered',
    view: fleet,
    input: event('instance-deleted', 'default', 'c1'),
    effects: ['forget-instance default/c1'],
    place: 'settled',
  },
  {
    name: 'a rename forgets the old name, then the new one is read',
    view: fleet,
    input: renamed('instance-renamed', 'c9', 'c1'),
    effects: ['forget-instance default/c1'],
    place: 'instance, interfaces',
  },
  {
    name: 'a network update wanting the network (E8): it waits for the read of its wire',
    input: event('network-updated', 'default', 'br0'),
    effects: [],
    place: 'network of default, attached',
  },
  {
    name: 'a network delete forgets the wire and re-reads what sat on it',
    input: event('network-deleted', 'default', 'br0'),
    effects: ['forget-network default/br0'],
    place: 'settled',
  },
  {
    name: 'a network rename forgets the old wire, then reads the new one',
    input: renamed('network-renamed', 'br9', 'br0'),
    effects: ['forget-network default/br0'],
    place: 'network of default, attached',
  },
  {
    name: 'a profile update re-reads the instances using it, in its place',
    view: fleet,
    input: event('profile-updated', 'default', 'web'),
    effects: ['fan-out default/c1'],
    place: 'settled',
  },
  {
    name: 'a profile delete re-reads nobody (Incus refuses to delete a profile in use)',
    view: fleet,
    input: event('profile-deleted', 'default', 'web'),
    effects: [],
    place: 'settled',
  },
  {
    name: 'a project update re-reads the project',
    input: event('project-updated', 'default', 'p1'),
    effects: ['read-project p1'],
    place: 'settled',
  },
  {
    name: 'a project delete prunes it (E4)',
    view: fleet,
    input: event('project-deleted', 'default', 'p1'),
    effects: ['prune-project p1'],
    place: 'settled',
  },
  {
    name: 'an event of a project not read yet: left unenriched by it, the project read, the event does not wait for it',
    view: fleet,
    input: event('instance-updated', 'p1', 'c7'),
    event: 'instance-updated p1/c7',
    effects: ['read-project p1'],
    place: 'instance, interfaces',
  },
  {
    name: 'an event of a project a list does not name (E6): dropped before any read',
    view: () => ({ projects: parseProjectsServed(['p1']) }),
    input: event('instance-updated', 'default', 'c1'),
    effects: [],
    place: 'drop',
  },
  {
    name: 'an event of a project a read found not served (E6): dropped',
    view: () => ({ projects: parseProjectsServed('user.rxfleet'), unserved: new Set(['p2']) }),
    input: event('instance-updated', 'p2', 'c1'),
    effects: [],
    place: 'drop',
  },
  {
    name: 'a prune of such a project still goes out: it is the project leaving',
    view: () => ({ projects: parseProjectsServed('user.rxfleet'), unserved: new Set(['p2']) }),
    input: event('instance-deleted', 'p2', 'c1', 'prune'),
    effects: ['forget-instance p2/c1'],
    place: 'settled',
  },
  {
    name: 'an instance the filter cannot serve by its name, never held: goes nowhere',
    view: () => ({ ...fleet(), instances: parseInstancesServed(['web-*']) }),
    input: event('instance-updated', 'default', 'db1'),
    effects: [],
    place: 'drop',
  },
  {
    name: 'an instance the filter no longer serves by its name, held: forgotten, it leaves once, bare',
    view: () => ({ ...fleet(), instances: parseInstancesServed(['web-*']) }),
    input: event('instance-updated', 'default', 'c1'),
    effects: ['forget-instance default/c1'],
    place: 'settled, unserved',
  },
  {
    name: 'an event that failed on its way: it keeps its place, nothing read',
    input: withFailed(event('instance-updated', 'default', 'c1'), 'enricher/read'),
    effects: [],
    place: 'settled',
  },
  {
    name: "a round's name always reads, whatever the wants say",
    input: event('instance-updated', 'default', 'c1', 'round'),
    effects: [],
    place: 'instance, interfaces',
  },
];

describe('routeEvent: how an event goes on', () => {
  it.each(cases)('$name', ({ view, input, event: out, effects, place }) => {
    const route = routeEvent(ownerView(view?.()), input);
    if (out !== undefined) expect(summary(route.event)).toBe(out);
    expect(route.effects.map(effectLine)).toEqual(effects);
    expect(placeLine(route.place)).toBe(place);
  });
});
