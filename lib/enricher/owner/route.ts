/**
 * Routing (§3.3 of the reference, in order), as pure functions of an event and what the model
 * holds: what the event needs read, what it changes ({@link Effect}s of the kinds an event sets
 * going), and how it takes its place in the line. The owner carries the route out; nothing here
 * reads Incus or changes anything.
 */
import { EnrichedEvent, withProject } from '../model/event';
import { FleetModel } from '../model/FleetModel';
import { InstancesServed, servesByName } from '../model/instancesServed';
import { ProjectsServed, servedByConfig, servedByName } from '../model/servedProjects';
import { Enrichment, WantedTable, wants } from '../model/wanted';
import { Effect } from './effects';

/** What routing looks at. */
export interface RouteView {
  readonly model: FleetModel;
  readonly wanted: WantedTable;
  readonly projects: ProjectsServed;
  readonly instances: InstancesServed;
  /** Projects a read found not served (E6). */
  readonly unserved: ReadonlySet<string>;
}

/** How an event goes on. */
export type Place =
  /** It takes no place: dropped before any read (its project or name is not served). */
  | { readonly kind: 'drop' }
  /** It takes a place answered at once: it leaves as it is once everything ahead has. */
  | { readonly kind: 'settled'; readonly unserved?: true }
  /** It waits in its place for a read of its instance. */
  | { readonly kind: 'instance'; readonly waitForRunning: boolean; readonly wantInterfaces: boolean }
  /** Its network is read; `attach` (E8): it waits for the read and travels with the network. */
  | { readonly kind: 'network'; readonly owner: string; readonly attach: boolean };

/** The route of one event. */
export interface Route {
  /** The event with its project's configuration attached, when wanted and held. */
  readonly event: EnrichedEvent;
  readonly effects: readonly Effect[];
  readonly place: Place;
}

/**
 * Whether a project is served (E6), as far as can be told now: by name where the setting can (a
 * list), else by what a read found, else by the configuration held; `undefined` while nothing tells.
 */
export function servedNow(view: RouteView, project: string): boolean | undefined {
  const byName = servedByName(view.projects, project);
  if (byName !== undefined) return byName;
  if (view.unserved.has(project)) return false;
  const config = view.model.projectConfig(project);
  return config == null ? undefined : servedByConfig(view.projects, project, config);
}

/**
 * The event with its project's configuration attached, if wanted. A project not read yet is left
 * unenriched rather than enriched with nothing, so a consumer can tell "sets none" from "not read".
 */
export function attachProject(view: RouteView, event: EnrichedEvent): EnrichedEvent {
  if (!wants(view.wanted, event.action, Enrichment.project)) return event;
  const config = view.model.projectConfig(event.project);
  return config == null ? event : withProject(event, config);
}

// A project read is owed when the configuration is wanted (or, with a marker, needed to decide
// whether the project is served) and not held; the event does not wait for it.
function projectRead(view: RouteView, event: EnrichedEvent): readonly Effect[] {
  const { project } = event;
  if (project === '' || view.model.projectConfig(project) != null || view.unserved.has(project)) return NONE;
  const forConfig = wants(view.wanted, event.action, Enrichment.project);
  return forConfig || servedNow(view, project) === undefined ? [{ kind: 'read-project', project }] : NONE;
}

// Shared, never written: most events change nothing on their way in.
const NONE: readonly Effect[] = [];
const SETTLED: Place = { kind: 'settled' };
const DROP: Place = { kind: 'drop' };
const joined = (a: readonly Effect[], b: readonly Effect[]): readonly Effect[] => (a.length === 0 ? b : b.length === 0 ? a : [...a, ...b]);

/** The route of `input`: an Incus event, a round's name, or an event the enricher invented. */
export function routeEvent(view: RouteView, input: EnrichedEvent): Route {
  // E6: what Incus or a round says about a project known not to be served goes nowhere, before
  // any read. A prune is the project leaving: its deletes go out.
  if ((input.origin === 'incus' || input.origin === 'round') && servedNow(view, input.project) === false)
    return { event: input, effects: NONE, place: DROP };
  const event = attachProject(view, input);
  const effects = projectRead(view, event);
  const settled = (more: readonly Effect[] = NONE): Route => ({ event, effects: joined(effects, more), place: SETTLED });
  if (event.status !== 'ok' || event.name === '') return settled();
  const { project, name, action } = event;
  switch (event.kind) {
    case 'network': {
      const owner = view.model.networkOwner(project);
      const renamed: readonly Effect[] = event.oldName !== undefined ? [{ kind: 'forget-network', owner, name: event.oldName }] : NONE;
      if (action === 'network-deleted') return settled([...renamed, { kind: 'forget-network', owner, name }]);
      return {
        event,
        effects: joined(effects, renamed),
        place: { kind: 'network', owner, attach: wants(view.wanted, action, Enrichment.network) },
      };
    }
    case 'profile':
      // Incus refuses to delete a profile still in use: a delete has nobody to re-read.
      return action === 'profile-deleted'
        ? settled()
        : settled([{ kind: 'fan-out', instances: view.model.instancesUsingProfile(project, name) }]);
    case 'project':
      if (action === 'project-deleted') return settled([{ kind: 'prune-project', project: name }]);
      return settled(action === 'project-updated' || action === 'project-created' ? [{ kind: 'read-project', project: name }] : []);
    case 'instance':
      return routeInstance(view, event, effects);
    default:
      return settled();
  }
}

function routeInstance(view: RouteView, event: EnrichedEvent, effects: readonly Effect[]): Route {
  const { project, name, action, oldName } = event;
  const held = (n: string): boolean => view.model.instance(project, n) !== undefined;
  if (action === 'instance-deleted')
    return { event, effects: joined(effects, [{ kind: 'forget-instance', project, name }]), place: SETTLED };
  const renamed: readonly Effect[] =
    action === 'instance-renamed' && oldName !== undefined ? [{ kind: 'forget-instance', project, name: oldName }] : NONE;
  // Not served by its name: nothing is read. One the model held (under this name, or the old one
  // of a rename) is forgotten and leaves once, bare; any other goes nowhere.
  if (servesByName(view.instances, name) === false) {
    const leaving = held(name) || (oldName !== undefined && held(oldName));
    if (!leaving) return { event, effects: NONE, place: DROP };
    return {
      event,
      effects: [...effects, ...renamed, { kind: 'forget-instance', project, name }],
      place: { kind: 'settled', unserved: true },
    };
  }
  // A round's name, a repair or a fan-out always reads: keeping the model true is their whole job.
  const bits = event.origin === 'incus' ? (view.wanted.get(action)?.enrich ?? 0) : Enrichment.instance | Enrichment.interfaces;
  if ((bits & (Enrichment.instance | Enrichment.interfaces)) === 0) return { event, effects: joined(effects, renamed), place: SETTLED };
  return {
    event,
    effects: joined(effects, renamed),
    place: { kind: 'instance', waitForRunning: action === 'instance-started', wantInterfaces: (bits & Enrichment.interfaces) !== 0 },
  };
}
