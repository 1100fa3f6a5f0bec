/**
 * What the owner's pure decisions are checked with: a view built from a small model, reads and
 * results written by hand, and one line per effect and per settlement, so a table of cases reads
 * as what the owner will do.
 */
import { IncusApiError, IncusInstance, IncusInstanceState } from '../../../lib/incus/api';
import { EnrichedEvent, newEvent } from '../../../lib/enricher/model/event';
import { FleetModel } from '../../../lib/enricher/model/FleetModel';
import { parseInstancesServed } from '../../../lib/enricher/model/instancesServed';
import { networkRecord } from '../../../lib/enricher/model/records';
import { parseProjectsServed } from '../../../lib/enricher/model/servedProjects';
import { daemonWanted } from '../../../lib/enricher/model/wanted';
import { Decision, Effect, Settlement } from '../../../lib/enricher/owner/effects';
import { LineEntry } from '../../../lib/enricher/owner/lineEntry';
import { OwnerView } from '../../../lib/enricher/owner/ownerState';
import { InstanceRead, NetworkRead, ProjectRead } from '../../../lib/enricher/owner/requests';
import { InstanceAnswer } from '../../../lib/enricher/reads/readInstance';
import { RoundContext } from '../../../lib/enricher/rounds/round';
import { summary } from './harness';

/** A model holding the default project (configuration read, `{}`), its bridge `br0` (10.0.0.1/24). */
export function modelWithBridge(): FleetModel {
  const model = new FleetModel();
  model.setProjectConfig('default', {});
  model.setNetwork(networkRecord({ name: 'br0', type: 'bridge', managed: true, config: { 'ipv4.address': '10.0.0.1/24' } }, 'default'));
  return model;
}

/** The owner's view: every project and instance served, the daemon's wants, warm; `over` as given. */
export function ownerView(over: Partial<OwnerView> = {}): OwnerView {
  return {
    model: modelWithBridge(),
    wanted: daemonWanted(),
    projects: parseProjectsServed(undefined),
    instances: parseInstancesServed(undefined),
    unserved: new Set(),
    configExclude: [],
    deletedAt: new Map(),
    forbiddenListings: new Set(),
    projectReads: new Set(),
    warm: true,
    networksReady: true,
    ...over,
  };
}

/** An event from Incus, or (`origin`) one the enricher invented. */
export function event(action: string, project: string, name: string, origin: EnrichedEvent['origin'] = 'incus'): EnrichedEvent {
  return newEvent({ action, project, name, origin, received: 0 });
}

/** A read of `project/name` asked for at `seq`, for `ev`; `placed`: the event holds a place in the line. */
export function instanceRead(seq: number, ev: EnrichedEvent, placed = true): InstanceRead {
  const { project, name } = ev;
  const read = {
    kind: 'instance',
    key: `ins/${project}/${name}`,
    seq,
    project,
    name,
    waitForRunning: false,
    wantInterfaces: true,
    event: ev,
  } as const;
  return placed ? { ...read, entry: new LineEntry(ev) } : read;
}

/** A read of network `owner/name`, as the owner asks for it. */
export function networkRead(seq: number, owner: string, name: string, more: Partial<NetworkRead> = {}): NetworkRead {
  return { kind: 'network', key: `net/${owner}/${name}`, seq, project: owner, owner, name, fanOut: 'if-changed', ...more };
}

/** A read of project `name`. */
export function projectRead(seq: number, name: string, round?: RoundContext): ProjectRead {
  return { kind: 'project', key: `prj/${name}/`, seq, name, ...(round !== undefined ? { round } : {}) };
}

/** What Incus answers for `name`, running in the default project with a NIC `eth0` on `network` and `ipv4` (none: no address yet). */
export function runningOn(name: string, network: string, ipv4?: string): InstanceAnswer {
  const instance: IncusInstance = {
    name,
    project: 'default',
    type: 'container',
    status: 'Running',
    status_code: 103,
    config: { 'user.role': 'web' },
    devices: { eth0: { type: 'nic', network } },
    profiles: ['default'],
  };
  const addresses = ipv4 === undefined ? [] : [{ family: 'inet', address: ipv4, netmask: '24', scope: 'global' }];
  const state: IncusInstanceState = { status: 'Running', status_code: 103, network: { eth0: { addresses } } };
  return { instance, state };
}

/** An Incus error that says the subject does not exist. */
export const notFound = (): IncusApiError => new IncusApiError('not found', 404);

/** One line per effect: its kind and what it is about. */
export function effectLine(effect: Effect): string {
  switch (effect.kind) {
    case 'store-instance':
      return `store-instance ${effect.project}/${effect.name} @${effect.record.interfaces.flatMap((i) => i.ipv4).join(',') || '-'}`;
    case 'store-network':
      return `store-network ${effect.record.project}/${effect.record.name} ${effect.record.ipv4 || '-'}`;
    case 'owe':
      return `owe ${effect.key} ${effect.what}`;
    case 'log':
      return `log ${effect.level}: ${effect.message}`;
    case 'fan-out':
      return `fan-out ${effect.instances.map((at) => `${at.project}/${at.name}`).join(',') || '-'}${effect.origin !== undefined ? ` (${effect.origin})` : ''}`;
    case 'read-network':
      return `read-network ${effect.owner}/${effect.name} as ${effect.project} ${effect.fanOut}${effect.followUp !== undefined ? ', then land again' : ''}${effect.round !== undefined ? `, round ${effect.round.number}` : ''}`;
    case 'read-project':
      return `read-project ${effect.project}${effect.round !== undefined ? `, round ${effect.round.number}` : ''}`;
    case 'land-instance':
      return `land-instance ${effect.result.key}`;
    case 'tell-round':
      return effect.landed === 'network'
        ? `tell round ${effect.round.number}: network landed`
        : `tell round ${effect.round.number}: project ${effect.project} ${effect.outcome.status}`;
    case 'project-served':
      return `project-served ${effect.project} ${JSON.stringify(effect.config)}`;
    case 'parked':
      return `parked ${effect.project} go ${effect.go}`;
    case 'listing':
      return `listing ${effect.what} ${effect.refused ? 'refused' : 'allowed'}`;
    case 'notice':
      return `notice round-end ${effect.notice.round} ${effect.notice.ok ? 'ok' : 'failed'}`;
    case 'networks-ready':
      return 'networks-ready';
    case 'forget-network':
    case 'drop-network':
      return `${effect.kind} ${effect.owner}/${effect.name}`;
    case 'forget-instance':
    case 'prune-instance':
    case 'drop-instance':
      return `${effect.kind} ${effect.project}/${effect.name}`;
    default:
      return `${effect.kind} ${effect.project}`;
  }
}

/** One line per settlement: the place it settles (or `push` for an invented event joining the line), and the answer. */
export function settlementLine({ entry, answer }: Settlement): string {
  let out = `${entry === undefined ? 'push' : `place of ${entry.event.action}`}: ${summary(answer.event)}`;
  if (answer.unserved === true) out += ' unserved';
  if (answer.unservedProject === true) out += ' unserved-project';
  if (answer.readAt !== undefined) out += ` readAt ${answer.readAt}`;
  return out;
}

/** A decision as lines. */
export function lines(decision: Decision): { effects: string[]; settlements: string[] } {
  return { effects: decision.effects.map(effectLine), settlements: decision.settlements.map(settlementLine) };
}
