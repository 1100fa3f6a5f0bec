/**
 * The one owner of the fleet model: the stage of the pipeline where events are routed, instances,
 * networks and projects are read (one read per subject), and what the reads found is written into
 * the model. It hands the ordered line an entry per event, in arrival order, and the answers it
 * went looking for on its own as they land.
 */
import { Observable, OperatorFunction } from 'rxjs';
import { PerKeyReader, SlotPool } from '@rxfleet/operators';
import { EnrichedEvent, newEvent } from '../model/event';
import { InstanceKey } from '../model/FleetModel';
import { servesAnswer } from '../model/instancesServed';
import { RoundEnd, RoundInput } from '../rounds/roundFeed';
import {
  Stamped,
  instanceKey,
  mustBeFresh,
  networkKey,
  parseInstanceKey,
  performRead,
  projectKey,
  supersedes,
} from '../reads/readRequests';
import { Decision, Effect } from './effects';
import { landInstance, landRead } from './landings';
import { LineEntry } from './lineEntry';
import { Mailbox } from './Mailbox';
import { FleetOwnerConfig, OwnerState, waitsForProject, warmsNow } from './ownerState';
import { Repairs } from './repairs';
import { InstanceRead, ReadRequest } from './requests';
import { takeRoundInput } from './roundInputs';
import { routeEvent } from './route';

/** What the owner takes in: Incus events (debounced), and the round's names, reads and signals. */
export type OwnerInput = RoundInput;

/**
 * What the owner hands on besides the line's entries, for the daemon's state: the model warmed
 * (the wires are known), a round ended, the number of instances waiting for an address changed.
 */
export type OwnerNotice = { readonly kind: 'warm' } | RoundEnd | { readonly kind: 'awaiting-address'; readonly instances: number };

/** The owner's one output stream: entries for the ordered line, in line order, and notices. */
export type OwnerOutput = LineEntry | OwnerNotice;

/** Whether an owner's output is an entry for the line. */
export const isLineEntry = (output: OwnerOutput): output is LineEntry => output instanceof LineEntry;

/** Whether an owner's output is a notice. */
export const isOwnerNotice = (output: OwnerOutput): output is OwnerNotice => !(output instanceof LineEntry);

/**
 * The owner as an operator: a fold over its tasks (an input, a read landing, a repair falling
 * due). Each task is decided by a pure function of the owner's state and the task (`route.ts`,
 * `landings.ts`, `roundInputs.ts`), and the decision carried out by the one apply below; nothing
 * the owner decides calls back into it. An entry goes out for every event that takes a place, in
 * arrival order, and one for every invented answer, when it lands. Its one output carries notices
 * too ({@link OwnerNotice}: warm, a round's end, instances awaiting an address), for the daemon's
 * state.
 *
 * Guarantees:
 * - The model changes only here, one task at a time. A task that comes while another runs (a read
 *   answering at once, a consumer feeding the input from what it was handed) waits its turn
 *   (`Mailbox`), so no task sees the model half patched. A task that throws is a bug: the output
 *   errors with it, and nothing more runs.
 * - Reads: one per subject (`PerKeyReader`), asked for straight from the apply (no Subject carries
 *   requests back into the stage), a start supersedes a plain read, a delete cancels (E7), an event
 *   arriving once its subject's read has begun is read again after it; at most `workers` calls at
 *   once (`SlotPool`), none held while an instance waits for its address.
 * - Completes when its input completes (the line then hands on everything it holds); every read,
 *   repair and timer stops with the subscription.
 */
export function fleetOwner(config: FleetOwnerConfig): OperatorFunction<OwnerInput, OwnerOutput> {
  return (source) =>
    new Observable<OwnerOutput>((subscriber) => {
      const { reader, scheduler, metrics } = config;
      const state = new OwnerState(config);
      const { model } = state;
      const mailbox = new Mailbox(
        () => metrics.setModelCounts(model.projectCount, model.instanceCount, model.networkCount),
        (error) => subscriber.error(error),
        // By the time the inbox runs dry every read of a deleted key asked before the delete has
        // been cancelled or has landed: the markers are not needed, and would grow with every name
        // ever deleted.
        () => state.deletedAt.clear(),
      );
      // A task, then the warmth it may have brought: the model warms once its wires are whole.
      const task = (work: () => void): void =>
        mailbox.post(() => {
          work();
          if (warmsNow(state)) warm(hands);
        });
      const slots = new SlotPool(config.workers);
      const serves = servesAnswer(config.instances);
      const reads = new PerKeyReader<ReadRequest, string, Stamped>({
        key: (request) => request.key,
        read: (request, giveBack) =>
          performRead(reader, request, state.seq, giveBack, { ipTimeout: config.ipTimeout, scheduler, slots, serves }),
        slots,
        supersedes,
        fresh: mustBeFresh,
        onLanded: (result) => task(() => carry(hands, landRead(state, result))),
      });
      const repairs = new Repairs({
        scheduler,
        ttl: config.ttl,
        ...config.repairs,
        onDue: ({ key, origin, wait }) => task(() => apply(hands, { kind: 'fan-out', instances: [parseInstanceKey(key)], origin, wait })),
        onChange: (pending, awaiting) => {
          metrics.repairsPending.set(pending);
          metrics.awaitingAddress.set(awaiting);
          subscriber.next({ kind: 'awaiting-address', instances: awaiting });
        },
      });
      const hands: Hands = { state, reads, repairs, emit: (output) => subscriber.next(output), config };
      // The end goes through the inbox too, behind whatever is still waiting in it.
      subscriber.add(
        source.subscribe({
          next: (input) => task(() => ('action' in input ? accept(hands, input) : carry(hands, takeRoundInput(state, input)))),
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

/** What carrying out a decision touches: the owner's state, its reads and repairs, its output. */
interface Hands {
  readonly state: OwnerState;
  readonly reads: PerKeyReader<ReadRequest, string, Stamped>;
  readonly repairs: Repairs;
  readonly emit: (output: OwnerOutput) => void;
  readonly config: FleetOwnerConfig;
}

/** Carries a decision out: its effects in order, then its settlements in order. */
function carry(hands: Hands, decision: Decision): void {
  for (const effect of decision.effects) apply(hands, effect);
  for (const { entry, answer } of decision.settlements) {
    if (entry !== undefined) entry.settle(answer);
    else hands.emit(LineEntry.answered(answer));
  }
}

/**
 * Routes an event (`route.ts`) and carries the route out: its effects, then its place in the line
 * and the read it waits on. An event that takes no place is counted when it came from Incus.
 */
function accept(hands: Hands, input: EnrichedEvent): void {
  const route = routeEvent(hands.state, input);
  const { event, place } = route;
  if (place.kind === 'drop') {
    if (input.origin === 'incus') hands.config.metrics.dropped('unserved');
    return;
  }
  for (const effect of route.effects) apply(hands, effect);
  if (place.kind === 'settled') {
    hands.emit(LineEntry.answered(place.unserved === true ? { event, unserved: true } : { event }));
  } else if (place.kind === 'instance') {
    const entry = new LineEntry(event);
    hands.emit(entry);
    readInstance(hands, event, { entry, waitForRunning: place.waitForRunning, wantInterfaces: place.wantInterfaces });
  } else {
    const { project, name } = event;
    const entry = place.attach ? new LineEntry(event) : LineEntry.answered({ event });
    hands.emit(entry);
    const read = { kind: 'network', key: networkKey(place.owner, name), project, owner: place.owner, name, fanOut: 'always' } as const;
    hands.reads.request({ ...read, seq: hands.state.nextSeq(), ...(place.attach ? { event, entry } : {}) });
  }
}

/**
 * The one apply: the only place an effect happens. Reads are asked of the per-key reads directly,
 * and what comes back comes back as a task.
 */
function apply(hands: Hands, effect: Effect): void {
  const { state, reads } = hands;
  const { model } = state;
  switch (effect.kind) {
    case 'forget-instance':
      return forgetInstance(hands, effect.project, effect.name);
    case 'forget-network': {
      const on = model.instancesOn(effect.owner, effect.name);
      model.deleteNetwork(effect.owner, effect.name);
      return fanOut(hands, on, 'fan-out', true);
    }
    case 'prune-project':
      // E4: a project that went away takes its instances with it, each announced as a delete.
      for (const name of model.instanceNames(effect.project)) prune(hands, { project: effect.project, name });
      model.deleteProject(effect.project);
      return;
    case 'prune-instance':
      return prune(hands, effect);
    case 'read-project': {
      const { project, round } = effect;
      state.projectReads.add(project);
      return reads.request({
        kind: 'project',
        key: projectKey(project),
        seq: state.nextSeq(),
        name: project,
        ...(round !== undefined ? { round } : {}),
      });
    }
    case 'read-network': {
      const { project, owner, name, fanOut: also, round, followUp } = effect;
      const read = { kind: 'network', key: networkKey(owner, name), seq: state.nextSeq(), project, owner, name, fanOut: also } as const;
      return reads.request({ ...read, ...(round !== undefined ? { round } : {}), ...(followUp !== undefined ? { followUp } : {}) });
    }
    case 'fan-out':
      return fanOut(hands, effect.instances, effect.origin ?? 'fan-out', effect.wait ?? true);
    case 'land-instance':
      return carry(hands, landInstance(state, effect.result, true));
    case 'parked':
      for (const read of state.held.takeParked(effect.project)) {
        if (effect.go === 'read') reads.request(read);
        else read.entry?.settle({ event: read.event, unservedProject: true });
      }
      return;
    case 'owe':
      return owe(hands.repairs, effect.key, effect.what);
    case 'tell-round':
      if (effect.landed === 'network') effect.round.networkLanded();
      else effect.round.projectLanded(effect.project, effect.outcome);
      return;
    case 'notice':
      return hands.emit(effect.notice);
    case 'log':
      return hands.config.logger[effect.level](effect.fields, effect.message);
    default:
      return write(state, effect);
  }
}

/** An effect that writes the owner's state and nothing else: the model, and what is kept beside it. */
type StateWrite = Extract<
  Effect,
  {
    kind:
      | 'store-instance'
      | 'drop-instance'
      | 'store-network'
      | 'drop-network'
      | 'project-read-landed'
      | 'project-served'
      | 'project-unserved'
      | 'networks-ready'
      | 'listing';
  }
>;

function write(state: OwnerState, effect: StateWrite): void {
  const { model } = state;
  switch (effect.kind) {
    case 'store-instance':
      model.setInstance(effect.project, effect.name, effect.record);
      return;
    case 'drop-instance':
      model.deleteInstance(effect.project, effect.name);
      return;
    case 'store-network':
      model.setNetwork(effect.record);
      return;
    case 'drop-network':
      model.deleteNetwork(effect.owner, effect.name);
      return;
    case 'project-read-landed':
      state.projectReads.delete(effect.project);
      return;
    case 'project-served':
      state.unserved.delete(effect.project);
      model.setProjectConfig(effect.project, effect.config);
      return;
    case 'project-unserved':
      state.unserved.add(effect.project);
      return;
    case 'networks-ready':
      state.networksReady = true;
      return;
    case 'listing':
      if (effect.refused) state.forbiddenListings.add(effect.what);
      else state.forbiddenListings.delete(effect.what);
      return;
  }
}

// The instance's repair schedule, as the landing decided (`repairs.ts`).
function owe(repairs: Repairs, key: string, what: 'repair' | 'address' | 'ttl' | 'nothing'): void {
  if (what === 'repair') repairs.failed(key);
  else if (what === 'address') repairs.awaitingAddress(key);
  else if (what === 'ttl') repairs.good(key);
  else repairs.forget(key);
}

const invented = (hands: Hands, action: string, at: InstanceKey, origin: EnrichedEvent['origin']): EnrichedEvent =>
  newEvent({ action, project: at.project, name: at.name, origin, received: hands.config.scheduler.now() });

// What a listing or a project's end takes out leaves as a delete of origin `prune`, routed as any delete is.
const prune = (hands: Hands, at: InstanceKey): void => accept(hands, invented(hands, 'instance-deleted', at, 'prune'));

// A delete deletes: every read of the key asked for before now is stale (E7), the reads of it held
// or parked go out as they arrived, its repairs stop, and it leaves the model.
function forgetInstance(hands: Hands, project: string, name: string): void {
  const { state } = hands;
  const key = instanceKey(project, name);
  state.deletedAt.set(key, state.nextSeq());
  hands.reads.cancel(key);
  for (const read of state.held.takeKey(key, project)) read.entry?.settle({ event: read.event });
  hands.repairs.forget(key);
  state.model.deleteInstance(project, name);
}

function fanOut(hands: Hands, instances: readonly InstanceKey[], origin: 'fan-out' | 'repair' | 'ttl', wait: boolean): void {
  for (const at of instances) {
    if (hands.state.unserved.has(at.project)) continue;
    readInstance(hands, invented(hands, 'instance-updated', at, origin), { waitForRunning: false, wantInterfaces: wait });
  }
}

// An instance read: held while the model is cold, parked while its project's configuration is on
// its way (`waitsForProject`), else asked for. An event from Incus starts its address ladder over (E11).
function readInstance(
  hands: Hands,
  event: EnrichedEvent,
  how: { entry?: LineEntry; waitForRunning: boolean; wantInterfaces: boolean },
): void {
  const { state } = hands;
  const { project, name } = event;
  const read: InstanceRead = { kind: 'instance', key: instanceKey(project, name), seq: state.nextSeq(), project, name, event, ...how };
  if (event.origin === 'incus') hands.repairs.live(read.key);
  if (!state.warm) state.held.hold(read);
  else ask(hands, read);
}

function ask(hands: Hands, read: InstanceRead): void {
  if (waitsForProject(hands.state, read)) hands.state.held.park(read);
  else hands.reads.request(read);
}

// Warm: what was held is asked for, strongest read of each key first, and the daemon is told.
function warm(hands: Hands): void {
  const { state } = hands;
  state.warm = true;
  hands.config.logger.info({ held: state.held.heldKeys }, 'warm: releasing held instance reads');
  for (const read of state.held.takeHeld()) ask(hands, read);
  hands.emit({ kind: 'warm' });
}
