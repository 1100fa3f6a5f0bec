/**
 * Where a run of the enricher starts: the model, whether it is warm, and the archive of what was
 * last said about each instance. From nothing; from the cold store (E1), so a restart serves a
 * warm model at once and the first round over an unchanged fleet is silent; or, when the enricher
 * publishes to a stream, from what consumers were last told (DECISIONS E14-E16), whatever the cold
 * store says, so the first round says what changed since consumers last heard and prunes what
 * they still think exists.
 */
import { ColdStoreDocument, modelFromSnapshot } from '../coldStore/coldStoreDocument';
import { EnrichedEvent, newEvent, withInstance } from '../model/event';
import { FleetModel } from '../model/FleetModel';
import { InstancesServed } from '../model/instancesServed';
import { ProjectsServed } from '../model/servedProjects';
import { WantedTable } from '../model/wanted';
import { attachProject } from '../owner/route';
import { Archive } from './Archive';

/** A run's start. */
export interface StartingPoint {
  readonly model: FleetModel;
  /** The wires are known: from a cold store, or from told events carrying instances. */
  readonly warm: boolean;
  readonly archive: Archive;
}

/** What the archive's seeds are routed with (the project configuration attached as events get it). */
export interface StartingView {
  readonly wanted: WantedTable;
  readonly projects: ProjectsServed;
  readonly instances: InstancesServed;
  /** When the seeds count as received. */
  readonly now: number;
}

/**
 * The start from the cold store's document (if one was loaded) and, when given, what consumers
 * were told: the model holds exactly the told instances, the cold store's projects and networks
 * kept, and the archive starts from the told events; without them, from the model itself.
 */
export function startingPoint(
  initial: ColdStoreDocument | undefined,
  told: readonly EnrichedEvent[] | undefined,
  view: StartingView,
): StartingPoint {
  const model = initial !== undefined ? modelFromSnapshot(initial) : new FleetModel();
  const filtering = view.instances.mode !== 'all';
  if (told === undefined) return { model, warm: initial !== undefined, archive: seededArchive(model, filtering, view) };
  overlayTold(model, told);
  return {
    model,
    warm: initial !== undefined || told.some((event) => event.instance !== undefined),
    archive: toldArchive(told, filtering),
  };
}

/** Replaces the model's instances with the ones consumers were told of; their networks and project configurations fill what the model lacks. */
export function overlayTold(model: FleetModel, told: readonly EnrichedEvent[]): void {
  for (const [at] of [...model.instances()]) model.deleteInstance(at.project, at.name);
  for (const event of told) {
    if (event.instance === undefined) continue;
    model.setInstance(event.project, event.name, event.instance);
    for (const network of Object.values(event.instance.networks)) {
      if (model.network(network.project, network.name) === undefined) model.setNetwork(network);
    }
    if (event.projectConfig !== undefined && model.projectConfig(event.project) == null)
      model.setProjectConfig(event.project, event.projectConfig);
  }
}

/** An archive holding, for each instance, the event consumers were last told that carried its record. */
export function toldArchive(told: readonly EnrichedEvent[], filtering: boolean): Archive {
  const archive = new Archive(filtering);
  for (const event of told) if (event.instance !== undefined) archive.file(event);
  return archive;
}

/**
 * An archive seeded as what was last said about each instance the model holds, so the first
 * round's reads of an unchanged fleet are silent rather than a restart re-announcing every instance.
 */
export function seededArchive(model: FleetModel, filtering: boolean, view: StartingView): Archive {
  const archive = new Archive(filtering);
  const routeView = { model, wanted: view.wanted, projects: view.projects, instances: view.instances, unserved: new Set<string>() };
  for (const [at, record] of model.instances()) {
    const seed = newEvent({ action: 'instance-updated', ...at, origin: 'round', received: view.now });
    archive.file(attachProject(routeView, withInstance(seed, record)));
  }
  return archive;
}
