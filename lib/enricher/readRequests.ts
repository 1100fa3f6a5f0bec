/**
 * The reads the enricher asks for, keyed so one read is in flight per subject, and what each
 * one reads.
 */
import { Observable, SchedulerLike } from 'rxjs';
import { Place } from '@rxfleet/operators';
import { IncusNetwork, IncusProject } from '../incus/api';
import { EnrichedEvent } from './event';
import { ObservableIncusReader } from './observableReader';
import { InstanceAnswer, readInstance } from './readInstance';
import type { RoundContext } from './round';

interface Common {
  /** `ins/<project>/<name>`, `net/<owner>/<name>` or `prj/<name>/`. */
  readonly key: string;
  /**
   * When it was asked for, in the enricher's own order: the events of one read are settled in this
   * order, and an instance read asked for before a delete of its key is stale (E7).
   */
  readonly seq: number;
}

/** A read of one instance, for an event holding a place in the line or for a fan-out with none. */
export interface InstanceRead extends Common {
  readonly kind: 'instance';
  readonly project: string;
  readonly name: string;
  readonly waitForRunning: boolean;
  readonly wantInterfaces: boolean;
  /** The event to enrich: the one in `place`, or a fan-out's invented `instance-updated`. */
  readonly event: EnrichedEvent;
  readonly place?: Place<EnrichedEvent>;
}

/** Whether a network read's landing re-reads the instances on the wire. */
export type NetworkFanOut = 'always' | 'if-changed';

/** A read of one network, owned by `owner`, asked for under `project`. */
export interface NetworkRead extends Common {
  readonly kind: 'network';
  readonly project: string;
  readonly owner: string;
  readonly name: string;
  readonly fanOut: NetworkFanOut;
  readonly event?: EnrichedEvent;
  readonly place?: Place<EnrichedEvent>;
  readonly round?: RoundContext;
}

/** A read of one project's own configuration. */
export interface ProjectRead extends Common {
  readonly kind: 'project';
  readonly name: string;
  readonly round?: RoundContext;
}

/** Any read. */
export type ReadRequest = InstanceRead | NetworkRead | ProjectRead;

/** What a read answers, by kind. */
export type ReadAnswer = InstanceAnswer | IncusNetwork | IncusProject;

// The kind is part of the key: an instance and a network called the same in one project would
// otherwise share a read, and the daemon would be asked for an instance named after the wire.
export const instanceKey = (project: string, name: string): string => `ins/${project}/${name}`;
export const networkKey = (owner: string, name: string): string => `net/${owner}/${name}`;
export const projectKey = (name: string): string => `prj/${name}/`;

/** The project and name of an instance key. */
export function parseInstanceKey(key: string): { project: string; name: string } {
  const [, project, name] = key.split('/');
  return { project, name };
}

// A start needs an answer read once the instance runs with an address; a read that wants
// interfaces needs more than one that does not.
function strength(request: ReadRequest): number {
  if (request.kind !== 'instance') return 0;
  return request.waitForRunning ? 2 : request.wantInterfaces ? 1 : 0;
}

/** Whether `next` needs more than the read running for `running` will give: then it supersedes it. */
export function supersedes(next: ReadRequest, running: ReadRequest): boolean {
  return strength(next) > strength(running);
}

/** Options for {@link performRead}. */
export interface PerformReadOptions {
  readonly ipTimeout: number;
  readonly scheduler: SchedulerLike;
}

/** The read a request's lead asks for. */
export function performRead(reader: ObservableIncusReader, request: ReadRequest, options: PerformReadOptions): Observable<ReadAnswer> {
  switch (request.kind) {
    case 'instance':
      return readInstance(reader, request, { ipTimeout: options.ipTimeout, scheduler: options.scheduler });
    case 'network':
      return reader.network$(request.project, request.name);
    case 'project':
      return reader.project$(request.name);
  }
}
