/**
 * What the owner does when a read lands: absorb the answer into the model, decide what the subject
 * is owed next, and answer every event that waited on the read.
 */
import type { ReadResult } from '@rxfleet/operators';
import { IncusNetwork, IncusProject } from '../../incus/api';
import { absorbInstance } from './absorbInstance';
import { READ_FAILED, withFailed, withInstance, withNetwork } from '../model/event';
import type { Owner } from './ownerParts';
import { isNotFound } from '../reads/observableReader';
import { ProjectOutcome } from '../rounds/round';
import { InstanceRead, NetworkRead, ProjectRead, Stamped } from '../reads/readRequests';
import { networkRecord } from '../model/records';
import { attachProject, servedNow } from './route';
import { servedByConfig } from '../model/servedProjects';
import { Enrichment, wants } from '../model/wanted';

/**
 * An instance read landed. Reads asked for before a delete of the key are stale (E7): their events
 * go out as they arrived and nothing is stored. Otherwise the answer is absorbed once, and each
 * event that waited is answered in arrival order: failed, bare, or with the instance; then each
 * invented event (a fan-out, a repair) joins the back of the line with what was found. Whether an
 * answer is news, and whether it is older than one already released, is the archive's call, in
 * release order.
 */
export function landInstance(owner: Owner, result: ReadResult<InstanceRead, string, Stamped>, afterNetworkRead = false): void {
  const { model, repairs, config, view } = owner;
  const reads = [...result.requests].sort((a, b) => a.seq - b.seq);
  const { key } = result;
  const { project, name } = reads[0];
  const deletedAt = owner.deletedAt.get(key) ?? -1;
  for (const read of reads) if (read.seq < deletedAt) read.entry?.settle({ event: read.event });
  const current = reads.filter((read) => read.seq > deletedAt);
  if (result.status === 'cancelled' || current.length === 0) {
    for (const read of current) read.entry?.settle({ event: read.event });
    return;
  }
  if (servedNow(view, project) === false) {
    for (const read of current) read.entry?.settle({ event: read.event, unservedProject: true });
    return;
  }
  const absorbed = absorbInstance(result, { lookup: (p, n) => model.resolveNetwork(p, n), configExclude: config.configExclude });
  switch (absorbed.kind) {
    case 'failed':
      config.logger.debug({ project, name, err: absorbed.error }, 'instance read failed: reading it again soon');
      repairs.failed(key);
      for (const read of current) read.entry?.settle({ event: withFailed(read.event, READ_FAILED) });
      return;
    case 'incomplete':
      if (!afterNetworkRead) {
        // A wire nothing has read (a certificate that may not list its networks never lists it):
        // read it by name, in the instance's project, and land this answer again once it is in,
        // so the events go out at once with what the read found rather than after a repair.
        config.logger.debug({ project, name, network: absorbed.network }, 'instance on a network not read yet: reading the network first');
        const then = (): void => landInstance(owner, result, true);
        owner.readNetwork(project, model.networkOwner(project), absorbed.network, { fanOut: 'if-changed', then });
        return;
      }
      // The network could not be read (or a second one is missing): fail, and read both again.
      config.logger.debug({ project, name, network: absorbed.network }, 'instance on a network not read yet: reading both again');
      owner.readNetwork(project, model.networkOwner(project), absorbed.network, { fanOut: 'if-changed' });
      repairs.failed(key);
      for (const read of current) read.entry?.settle({ event: withFailed(read.event, READ_FAILED) });
      return;
    case 'gone':
      repairs.forget(key);
      for (const read of current) read.entry?.settle({ event: read.event });
      return;
    case 'unserved':
      model.deleteInstance(project, name);
      repairs.forget(key);
      for (const read of current) {
        if (read.entry !== undefined) read.entry.settle({ event: read.event, unserved: true });
      }
      for (const read of current) if (read.entry === undefined) owner.push({ event: read.event, unserved: true });
      return;
    case 'stored': {
      model.setInstance(project, name, absorbed.record);
      if (absorbed.awaitingAddress) repairs.awaitingAddress(key);
      else repairs.good(key);
      const answer = (read: InstanceRead) => ({
        event: attachProject(view, withInstance(read.event, absorbed.record)),
        readAt: absorbed.readAt,
      });
      for (const read of current) read.entry?.settle(answer(read));
      // Invented events have no place to keep: they join the back of the line, behind the real
      // events of the same read, so a live event and a fan-out on one key stay one event.
      for (const read of current) if (read.entry === undefined) owner.push(answer(read));
      return;
    }
  }
}

/**
 * A network read landed: it patches the wire (a gone one is forgotten, and what sat on it read
 * again), answers the events that waited for it (E8), and re-reads every instance on it when
 * the event asked for that or the wire changed (a round's read that found nothing new has nothing
 * to re-read).
 */
export function landNetwork(owner: Owner, result: ReadResult<NetworkRead, string, Stamped<IncusNetwork>>): void {
  const { model, view, config } = owner;
  const reads = [...result.requests].sort((a, b) => a.seq - b.seq);
  const { owner: networkOwner, name } = reads[0];
  for (const read of reads) if (read.round !== undefined && !read.round.abandoned) read.round.networkLanded();
  if (result.status !== 'answered') {
    const gone = result.status === 'failed' && isNotFound(result.error);
    if (gone) owner.apply({ kind: 'forget-network', owner: networkOwner, name });
    else if (result.status === 'failed') config.logger.debug({ owner: networkOwner, name, err: result.error }, 'network read failed');
    for (const read of reads)
      if (read.event !== undefined) read.entry?.settle({ event: gone ? read.event : withFailed(read.event, READ_FAILED) });
    for (const read of reads) read.then?.();
    return;
  }
  const record = networkRecord(result.value.answer, networkOwner);
  const changed = model.setNetwork(record);
  for (const read of reads)
    if (read.event !== undefined) read.entry?.settle({ event: attachProject(view, withNetwork(read.event, record)) });
  if (reads.some((read) => read.fanOut === 'always') || changed) owner.fanOut(model.instancesOn(record.project, record.name), 'fan-out');
  for (const read of reads) read.then?.();
}

/**
 * A project read landed: a project not served takes its instances out (E4) and drops what waits
 * on it (E6); a served one stores its configuration, releases the reads parked on it, and, when
 * its labels changed, re-reads its instances so each says so again. A project that is gone is
 * pruned; a read that failed changes nothing (a project is never pruned on a failed read).
 */
export function landProject(owner: Owner, result: ReadResult<ProjectRead, string, Stamped<IncusProject>>): void {
  const { model, config } = owner;
  const name = result.requests[0].name;
  owner.projectReads.delete(name);
  let outcome: ProjectOutcome;
  if (result.status === 'answered') {
    const configuration = result.value.answer.config ?? {};
    if (!servedByConfig(config.projects, name, configuration)) {
      owner.projectUnserved(name);
      outcome = { status: 'unserved' };
    } else {
      owner.unserved.delete(name);
      const hadInstances = model.instanceNames(name);
      const changed = model.setProjectConfig(name, configuration);
      owner.readParked(name);
      if (changed && wants(config.wanted, 'instance-updated', Enrichment.project)) {
        owner.fanOut(
          hadInstances.map((n) => ({ project: name, name: n })),
          'fan-out',
        );
      }
      outcome = { status: 'served', config: configuration };
    }
  } else if (result.status === 'failed' && isNotFound(result.error)) {
    owner.pruneProject(name);
    owner.readParked(name);
    outcome = { status: 'gone' };
  } else {
    config.logger.debug({ project: name, err: result.status === 'failed' ? result.error : 'cancelled' }, 'project read failed');
    owner.readParked(name);
    outcome = { status: 'failed', config: model.projectConfig(name) };
  }
  for (const read of result.requests) if (read.round !== undefined && !read.round.abandoned) read.round.projectLanded(name, outcome);
  owner.maybeWarm();
}
