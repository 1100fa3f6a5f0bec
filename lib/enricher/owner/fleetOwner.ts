/**
 * The one owner of the fleet model: the stage of the pipeline where events are routed, instances,
 * networks and projects are read (one read per subject), and what the reads found is written into
 * the model. It hands the ordered line an entry per event, in arrival order, and the answers it
 * went looking for on its own as they land.
 */
import { Observable, OperatorFunction } from 'rxjs';
import { PerKeyReader, ReadResult, SlotPool } from '@rxfleet/operators';
import { IncusNetwork, IncusProject } from '../../incus/api';
import { EnrichedEvent, newEvent } from '../model/event';
import { InstanceKey } from '../model/FleetModel';
import { HeldReads } from './heldReads';
import { servesAnswer } from '../model/instancesServed';
import { LineEntry } from '../pipeline/lineEntry';
import { Mailbox } from './Mailbox';
import { FleetOwnerConfig, Owner, OwnerInput, OwnerOutput } from './ownerParts';
import {
  InstanceRead,
  NetworkRead,
  ProjectRead,
  ReadRequest,
  Stamped,
  instanceKey,
  mustBeFresh,
  networkKey,
  parseInstanceKey,
  performRead,
  projectKey,
  supersedes,
} from '../reads/readRequests';
import { Repairs } from './repairs';
import { routeEvent } from './route';
import { landInstance, landNetwork, landProject } from './landings';
import { takeRoundInput } from './roundInputs';
import { Enrichment, wants } from '../model/wanted';

/**
 * The owner as an operator: each input is routed (`route.ts`) and the route carried out, each
 * read's answer absorbed (`absorbInstance.ts`) and its events answered (`landings.ts`); an entry
 * goes out for every event that takes a place, in arrival order, and one for every invented
 * answer, when it lands. Its one output carries notices too ({@link OwnerNotice}: warm, a round's
 * end, instances awaiting an address), for the daemon's state and for the debounce stage upstream,
 * which collapses only once a round has ended (the enricher feeds that back as a stream).
 *
 * Guarantees:
 * - The model changes only here, one task at a time: an input, a read landing, a repair falling
 *   due. A task that comes while another runs (a read answering at once, a consumer feeding the
 *   input from what it was handed) waits its turn (`Mailbox`), so no task sees the model half
 *   patched. A task that throws is a bug: the output errors with it, and nothing more runs.
 * - Reads: one per subject (`PerKeyReader`), a start supersedes a plain read, a delete cancels
 *   (E7), an event arriving once its subject's read has begun is read again after it; at most
 *   `workers` calls at once (`SlotPool`), none held while an instance waits for its address.
 * - Completes when its input completes (the line then hands on everything it holds); every read,
 *   repair and timer stops with the subscription.
 */
export function fleetOwner(config: FleetOwnerConfig): OperatorFunction<OwnerInput, OwnerOutput> {
  return (source) =>
    new Observable<OwnerOutput>((subscriber) => {
      const { model, reader, scheduler, logger, metrics } = config;
      let seq = 0;
      const emit = (output: OwnerOutput): void => subscriber.next(output);
      const slots = new SlotPool(config.workers);
      const serves = servesAnswer(config.instances);
      const mailbox = new Mailbox(
        () => metrics.setModelCounts(model.projectCount, model.instanceCount, model.networkCount),
        (error) => subscriber.error(error),
        // By the time the inbox runs dry every read of a deleted key asked before the delete has
        // been cancelled or has landed: the markers are not needed, and would grow with every name
        // ever deleted.
        () => owner.deletedAt.clear(),
      );
      const reads = new PerKeyReader<ReadRequest, string, Stamped>({
        key: (request) => request.key,
        read: (request, release) => performRead(reader, request, seq, release, { ipTimeout: config.ipTimeout, scheduler, slots, serves }),
        slots,
        supersedes,
        fresh: mustBeFresh,
        onLanded: (result) => mailbox.post(() => land(result)),
      });
      const repairs = new Repairs({
        scheduler,
        ttl: config.ttl,
        ...config.repairs,
        onDue: ({ key, origin, wait }) => mailbox.post(() => owner.fanOut([parseInstanceKey(key)], origin, wait)),
        onChange: (pending, awaiting) => {
          metrics.repairsPending.set(pending);
          metrics.awaitingAddress.set(awaiting);
          emit({ kind: 'awaiting-address', instances: awaiting });
        },
      });

      const invented = (action: string, at: InstanceKey, origin: EnrichedEvent['origin']): EnrichedEvent =>
        newEvent({ action, project: at.project, name: at.name, origin, received: scheduler.now() });

      // The project's configuration is on its way: waiting for it makes one right event rather
      // than an unlabelled one followed by a fan-out's correction.
      const askInstance = (read: InstanceRead): void => {
        const { project } = read;
        if (
          owner.projectReads.has(project) &&
          model.projectConfig(project) == null &&
          wants(config.wanted, read.event.action, Enrichment.project)
        )
          owner.held.park(read);
        else reads.request(read);
      };

      const readInstance = (
        project: string,
        name: string,
        event: EnrichedEvent,
        how: { entry?: LineEntry; waitForRunning: boolean; wantInterfaces: boolean },
      ): void => {
        const read: InstanceRead = { kind: 'instance', key: instanceKey(project, name), seq: seq++, project, name, event, ...how };
        if (event.origin === 'incus') repairs.live(read.key);
        if (!owner.warm) owner.held.hold(read);
        else askInstance(read);
      };

      const forgetInstance = (project: string, name: string): void => {
        const key = instanceKey(project, name);
        owner.deletedAt.set(key, seq++);
        reads.cancel(key);
        for (const read of owner.held.takeKey(key, project)) read.entry?.settle({ event: read.event });
        repairs.forget(key);
        model.deleteInstance(project, name);
      };

      const unserved = new Set<string>();
      const owner: Owner = {
        config,
        model,
        view: { model, wanted: config.wanted, projects: config.projects, instances: config.instances, unserved },
        repairs,
        held: new HeldReads(),
        projectReads: new Set<string>(),
        unserved,
        deletedAt: new Map<string, number>(),
        warm: config.warm,
        networksReady: config.warm,
        forbiddenListings: new Set<string>(),
        push: (answer) => emit(LineEntry.answered(answer)),
        notify: emit,
        accept: (input) => {
          const route = routeEvent(owner.view, input);
          if (route.place.kind === 'drop') {
            if (input.origin === 'incus') metrics.dropped('unserved');
            return;
          }
          for (const effect of route.effects) owner.apply(effect);
          const { event, place } = route;
          if (place.kind === 'settled') {
            emit(LineEntry.answered(place.unserved === true ? { event, unserved: true } : { event }));
          } else if (place.kind === 'instance') {
            const entry = new LineEntry(event);
            emit(entry);
            readInstance(event.project, event.name, event, {
              entry,
              waitForRunning: place.waitForRunning,
              wantInterfaces: place.wantInterfaces,
            });
          } else if (place.attach) {
            const entry = new LineEntry(event);
            emit(entry);
            owner.readNetwork(event.project, place.owner, event.name, { fanOut: 'always', event, entry });
          } else {
            emit(LineEntry.answered({ event }));
            owner.readNetwork(event.project, place.owner, event.name, { fanOut: 'always' });
          }
        },
        apply: (effect) => {
          switch (effect.kind) {
            case 'forget-instance':
              return forgetInstance(effect.project, effect.name);
            case 'forget-network': {
              const on = model.instancesOn(effect.owner, effect.name);
              model.deleteNetwork(effect.owner, effect.name);
              return owner.fanOut(on, 'fan-out');
            }
            case 'prune-project':
              return owner.pruneProject(effect.project);
            case 'read-project':
              return owner.readProject(effect.project);
            case 'fan-out':
              return owner.fanOut(effect.instances, 'fan-out');
          }
        },
        readNetwork: (project, networkOwner, name, how) => {
          const read: NetworkRead = {
            kind: 'network',
            key: networkKey(networkOwner, name),
            seq: seq++,
            project,
            owner: networkOwner,
            name,
            ...how,
          };
          reads.request(read);
        },
        readProject: (name, round) => {
          owner.projectReads.add(name);
          const read: ProjectRead = { kind: 'project', key: projectKey(name), seq: seq++, name, ...(round !== undefined ? { round } : {}) };
          reads.request(read);
        },
        fanOut: (instances, origin, wait = true) => {
          for (const at of instances) {
            if (owner.unserved.has(at.project)) continue;
            readInstance(at.project, at.name, invented('instance-updated', at, origin), { waitForRunning: false, wantInterfaces: wait });
          }
        },
        pruneProject: (project) => {
          // E4: a project that went away takes its instances with it, each announced as a delete.
          for (const name of model.instanceNames(project)) owner.accept(invented('instance-deleted', { project, name }, 'prune'));
          model.deleteProject(project);
        },
        projectUnserved: (project, round) => {
          const wasServed = !owner.unserved.has(project);
          owner.unserved.add(project);
          if (wasServed && model.hasProject(project)) {
            logger.info({ project }, 'project no longer served: its instances leave as deletes');
            owner.pruneProject(project);
          }
          for (const read of owner.held.takeParked(project)) read.entry?.settle({ event: read.event, unservedProject: true });
          if (round !== undefined && !round.abandoned) round.projectLanded(project, { status: 'unserved' });
        },
        readParked: (project) => {
          for (const read of owner.held.takeParked(project)) reads.request(read);
        },
        // Warm needs the wire map whole and every project read landed, so what was held goes out
        // with its networks and its project's configuration. Once warm, never cold again: a
        // reconnect leaves the wires as stale as everything else, which is what the round after it
        // is for.
        maybeWarm: () => {
          if (owner.warm || !owner.networksReady || owner.projectReads.size > 0) return;
          owner.warm = true;
          logger.info({ held: owner.held.heldKeys }, 'warm: releasing held instance reads');
          for (const read of owner.held.takeHeld()) askInstance(read);
          emit({ kind: 'warm' });
        },
      };

      const land = (result: ReadResult<ReadRequest, string, Stamped>): void => {
        const lead = result.requests[0];
        if (lead === undefined) return;
        if (lead.kind === 'instance') landInstance(owner, result as ReadResult<InstanceRead, string, Stamped>);
        else if (lead.kind === 'network') landNetwork(owner, result as ReadResult<NetworkRead, string, Stamped<IncusNetwork>>);
        else landProject(owner, result as ReadResult<ProjectRead, string, Stamped<IncusProject>>);
      };

      // The end goes through the inbox too, behind whatever is still waiting in it.
      subscriber.add(
        source.subscribe({
          next: (input) => mailbox.post(() => ('action' in input ? owner.accept(input) : takeRoundInput(owner, input))),
          error: (error: unknown) => mailbox.post(() => subscriber.error(error)),
          complete: () => mailbox.post(() => subscriber.complete()),
        }),
      );
      return () => {
        reads.dispose();
        repairs.clear();
      };
    });
}
