/**
 * A read landed, as pure functions of the owner's view and the read's result: what the answer
 * changes in the model, what the subject is owed next, and the answer of every event that waited
 * on the read. The owner's apply carries the decision out; nothing here reads Incus or changes
 * anything.
 */
import { absorbInstance } from './absorbInstance';
import { EnrichedEvent, READ_FAILED, withFailed, withInstance, withNetwork } from '../model/event';
import { InstanceKey } from '../model/FleetModel';
import { networkRecord, networksEqual, configsEqual } from '../model/records';
import { servedByConfig } from '../model/servedProjects';
import { Enrichment, wants } from '../model/wanted';
import { isNotFound } from '../reads/observableReader';
import { ProjectOutcome } from '../rounds/round';
import { Answer } from './lineEntry';
import { Decision, Effect, NOTHING, Settlement } from './effects';
import { OwnerView } from './ownerState';
import { AnyResult, InstanceRead, InstanceResult, NetworkResult, ProjectResult } from './requests';
import { attachProject, servedNow } from './route';

/** What a read landing comes to, whatever its kind. */
export function landRead(view: OwnerView, result: AnyResult): Decision {
  const lead = result.requests[0];
  if (lead === undefined) return NOTHING;
  if (lead.kind === 'instance') return landInstance(view, result as InstanceResult);
  if (lead.kind === 'network') return landNetwork(view, result as NetworkResult);
  return landProject(view, result as ProjectResult);
}

/** The answers for the reads that hold a place in the line (an invented event's read has none). */
function placesOf<R extends { readonly entry?: Settlement['entry'] }>(reads: readonly R[], answer: (read: R) => Answer): Settlement[] {
  const settlements: Settlement[] = [];
  for (const read of reads) if (read.entry !== undefined) settlements.push({ entry: read.entry, answer: answer(read) });
  return settlements;
}

const bare = (read: { readonly event: EnrichedEvent }): Answer => ({ event: read.event });
const failed = (read: { readonly event: EnrichedEvent }): Answer => ({ event: withFailed(read.event, READ_FAILED) });
const bySeq = (a: { seq: number }, b: { seq: number }): number => a.seq - b.seq;

/**
 * An instance read landed. Reads asked for before a delete of the key are stale (E7): their events
 * go out as they arrived and nothing is stored. Otherwise the answer is absorbed once, and each
 * event that waited is answered in arrival order: failed, bare, or with the instance; then each
 * invented event (a fan-out, a repair) joins the back of the line with what was found. Whether an
 * answer is news, and whether it is older than one already released, is the archive's call, in
 * release order. `afterNetworkRead`: this answer waited on a read of a network it found missing.
 */
export function landInstance(view: OwnerView, result: InstanceResult, afterNetworkRead = false): Decision {
  const reads = [...result.requests].sort(bySeq);
  const deletedAt = view.deletedAt.get(result.key) ?? -1;
  const stale = placesOf(
    reads.filter((read) => read.seq < deletedAt),
    bare,
  );
  const current = reads.filter((read) => read.seq > deletedAt);
  const decided =
    result.status === 'cancelled' || current.length === 0
      ? { effects: NOTHING.effects, settlements: placesOf(current, bare) }
      : absorbed(view, result, current, afterNetworkRead);
  return stale.length === 0 ? decided : { effects: decided.effects, settlements: [...stale, ...decided.settlements] };
}

// The answer of reads still current, absorbed once (`absorbInstance.ts`).
function absorbed(view: OwnerView, result: InstanceResult, current: readonly InstanceRead[], afterNetworkRead: boolean): Decision {
  const { key } = result;
  const { project, name } = current[0];
  if (servedNow(view, project) === false)
    return { effects: [], settlements: placesOf(current, (read) => ({ ...bare(read), unservedProject: true })) };
  const answer = absorbInstance(result, { lookup: (p, n) => view.model.resolveNetwork(p, n), configExclude: view.configExclude });
  switch (answer.kind) {
    case 'failed':
      return {
        effects: [debug({ project, name, err: answer.error }, 'instance read failed: reading it again soon'), owe(key, 'repair')],
        settlements: placesOf(current, failed),
      };
    case 'incomplete':
      return missingNetwork(view, result, current, answer.network, afterNetworkRead);
    case 'gone':
      return { effects: [owe(key, 'nothing')], settlements: placesOf(current, bare) };
    case 'unserved':
      return {
        effects: [{ kind: 'drop-instance', project, name }, owe(key, 'nothing')],
        settlements: answers(current, (read) => ({ ...bare(read), unserved: true })),
      };
    case 'stored':
      return {
        effects: [{ kind: 'store-instance', project, name, record: answer.record }, owe(key, answer.awaitingAddress ? 'address' : 'ttl')],
        settlements: answers(current, (read) => ({
          event: attachProject(view, withInstance(read.event, answer.record)),
          readAt: answer.readAt,
        })),
      };
  }
}

const owe = (key: string, what: 'repair' | 'address' | 'ttl' | 'nothing'): Effect => ({ kind: 'owe', key, what });
const debug = (fields: Record<string, unknown>, message: string): Effect => ({ kind: 'log', level: 'debug', fields, message });

/**
 * An instance sits on a network the model does not hold (a certificate that may not list its
 * networks never lists it). The first time, the network is read by name, in the instance's
 * project, and this answer lands again once it is in, so the events go out at once with what the
 * read found rather than after a repair; the events wait meanwhile. After that read (the network
 * could not be read, or a second one is missing): the events fail, and both are read again.
 */
function missingNetwork(
  view: OwnerView,
  result: InstanceResult,
  current: readonly InstanceRead[],
  network: string,
  afterNetworkRead: boolean,
): Decision {
  const { project, name } = current[0];
  const read = { kind: 'read-network', project, owner: view.model.networkOwner(project), name: network, fanOut: 'if-changed' } as const;
  if (!afterNetworkRead)
    return {
      effects: [
        debug({ project, name, network }, 'instance on a network not read yet: reading the network first'),
        { ...read, followUp: result },
      ],
      settlements: [],
    };
  return {
    effects: [debug({ project, name, network }, 'instance on a network not read yet: reading both again'), read, owe(result.key, 'repair')],
    settlements: placesOf(current, failed),
  };
}

// Every event's answer: those with a place first, in arrival order; then the invented ones join
// the back of the line, behind the real events of the same read, so a live event and a fan-out on
// one key stay one event.
function answers(reads: readonly InstanceRead[], answer: (read: InstanceRead) => Answer): Settlement[] {
  const settlements = placesOf(reads, answer);
  for (const read of reads) if (read.entry === undefined) settlements.push({ answer: answer(read) });
  return settlements;
}

/**
 * A network read landed: it patches the wire (a gone one is forgotten, and what sat on it read
 * again), answers the events that waited for it (E8), and re-reads every instance on it when
 * the event asked for that or the wire changed (a round's read that found nothing new has nothing
 * to re-read). Each round that asked is told, and each instance answer that waited on the wire
 * lands again.
 */
export function landNetwork(view: OwnerView, result: NetworkResult): Decision {
  const reads = [...result.requests].sort(bySeq);
  const { owner, name } = reads[0];
  const effects: Effect[] = [];
  for (const read of reads)
    if (read.round !== undefined && !read.round.abandoned) effects.push({ kind: 'tell-round', round: read.round, landed: 'network' });
  const waiting = reads.filter((read): read is typeof read & { event: EnrichedEvent } => read.event !== undefined);
  let settlements: Settlement[];
  if (result.status !== 'answered') {
    const gone = result.status === 'failed' && isNotFound(result.error);
    if (gone) effects.push({ kind: 'forget-network', owner, name });
    else if (result.status === 'failed')
      effects.push({ kind: 'log', level: 'debug', fields: { owner, name, err: result.error }, message: 'network read failed' });
    settlements = placesOf(waiting, gone ? bare : failed);
  } else {
    const record = networkRecord(result.value.answer, owner);
    const changed = !networksEqual(view.model.network(record.project, record.name), record);
    effects.push({ kind: 'store-network', record });
    settlements = placesOf(waiting, (read) => ({ event: attachProject(view, withNetwork(read.event, record)) }));
    if (changed || reads.some((read) => read.fanOut === 'always'))
      effects.push(fanOut(view.model.instancesOn(record.project, record.name)));
  }
  for (const read of reads) if (read.followUp !== undefined) effects.push({ kind: 'land-instance', result: read.followUp });
  return { effects, settlements };
}

const fanOut = (instances: readonly InstanceKey[]): Effect => ({ kind: 'fan-out', instances });

/**
 * A project read landed: a project not served takes its instances out (E4) and drops what waits
 * on it (E6); a served one stores its configuration, releases the reads parked on it, and, when
 * its labels changed, re-reads its instances so each says so again. A project that is gone is
 * pruned; a read that failed changes nothing (a project is never pruned on a failed read). Each
 * round that asked is told how it ended.
 */
export function landProject(view: OwnerView, result: ProjectResult): Decision {
  const project = result.requests[0].name;
  const effects: Effect[] = [{ kind: 'project-read-landed', project }];
  let outcome: ProjectOutcome;
  if (result.status === 'answered') {
    const config = result.value.answer.config ?? {};
    if (!servedByConfig(view.projects, project, config)) {
      effects.push(...projectUnserved(view, project));
      outcome = { status: 'unserved' };
    } else {
      effects.push({ kind: 'project-served', project, config }, { kind: 'parked', project, go: 'read' });
      const changed = !configsEqual(view.model.projectConfig(project), config);
      if (changed && wants(view.wanted, 'instance-updated', Enrichment.project))
        effects.push(fanOut(view.model.instanceNames(project).map((name) => ({ project, name }))));
      outcome = { status: 'served', config };
    }
  } else if (result.status === 'failed' && isNotFound(result.error)) {
    effects.push({ kind: 'prune-project', project }, { kind: 'parked', project, go: 'read' });
    outcome = { status: 'gone' };
  } else {
    const err = result.status === 'failed' ? result.error : 'cancelled';
    effects.push(
      { kind: 'log', level: 'debug', fields: { project, err }, message: 'project read failed' },
      { kind: 'parked', project, go: 'read' },
    );
    outcome = { status: 'failed', config: view.model.projectConfig(project) };
  }
  for (const read of result.requests)
    if (read.round !== undefined && !read.round.abandoned)
      effects.push({ kind: 'tell-round', round: read.round, landed: 'project', project, outcome });
  return { effects, settlements: [] };
}

/**
 * A project known not to be served from now on (E6): one that was served and is held takes its
 * instances out, each announced as a delete (E4); the reads parked on it go nowhere.
 */
export function projectUnserved(view: OwnerView, project: string): Effect[] {
  const effects: Effect[] = [{ kind: 'project-unserved', project }];
  if (!view.unserved.has(project) && view.model.hasProject(project)) {
    effects.push(
      { kind: 'log', level: 'info', fields: { project }, message: 'project no longer served: its instances leave as deletes' },
      { kind: 'prune-project', project },
    );
  }
  effects.push({ kind: 'parked', project, go: 'nowhere' });
  return effects;
}
