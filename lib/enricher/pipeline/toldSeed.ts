/**
 * Starting from what consumers were last told (DECISIONS E14-E16): when the enricher publishes
 * to a stream, what the stream and the state bucket hold about each instance is what consumers
 * know, whatever the cold store says. The model holds exactly those instances (the cold store's
 * projects and networks kept), and the archive starts from those events, so the first round says
 * what changed since consumers last heard and prunes what they still think exists.
 */
import { FleetModel } from '../model/FleetModel';
import { EnrichedEvent } from '../model/event';
import { Archive } from './Archive';

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
