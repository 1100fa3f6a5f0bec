/**
 * The reads the enricher asks for, keyed so one read is in flight per subject, and what each
 * one reads.
 */
import { Observable, SchedulerLike, map } from 'rxjs';
import { SlotPool } from '@rxfleet/operators';
import { IncusInstance, IncusNetwork, IncusProject } from '../../incus/api';
import { EnrichedEvent } from '../model/event';
import { LineEntry } from '../pipeline/lineEntry';
import { ObservableIncusReader } from './observableReader';
import { InstanceAnswer, readInstance } from './readInstance';
import type { RoundContext } from '../rounds/round';

interface Common {
  /** `ins/<project>/<name>`, `net/<owner>/<name>` or `prj/<name>/`. */
  readonly key: string;
  /**
   * When it was asked for, in the enricher's own count of events: the events of one read are
   * settled in this order, and an instance read asked for before a delete of its key is stale (E7).
   */
  readonly seq: number;
}

/** A read of one instance, for an event holding a place in the line or for an invented one with none. */
export interface InstanceRead extends Common {
  readonly kind: 'instance';
  readonly project: string;
  readonly name: string;
  readonly waitForRunning: boolean;
  /** Somebody wants interfaces: a running instance without an address is worth waiting on. */
  readonly wantInterfaces: boolean;
  /** The event to enrich: the one in `entry`, or an invented `instance-updated`. */
  readonly event: EnrichedEvent;
  readonly entry?: LineEntry;
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
  readonly entry?: LineEntry;
  readonly round?: RoundContext;
  /** Told once the read has landed, whatever it found (an instance read waiting on this network). */
  readonly then?: () => void;
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

/** An answer and where the enricher's count stood when its read began (see `Answer.readAt`). */
export interface Stamped<A = ReadAnswer> {
  readonly answer: A;
  readonly readAt: number;
}

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

/**
 * Whether a request must be answered by a read that started after it arrived. Instance and network
 * reads must: a read already at the server may predate the change the request is about (a
 * configuration change during a start's wait for its address went out with the old one, was found
 * unchanged and was lost until the next round). Project reads need not: a round counts each of its
 * requests once, and the window is one short call.
 */
export function mustBeFresh(request: ReadRequest): boolean {
  return request.kind !== 'project';
}

/** Options for {@link performRead}. */
export interface PerformReadOptions {
  readonly ipTimeout: number;
  readonly scheduler: SchedulerLike;
  /** The workers: a read's polls for an address each take one. */
  readonly slots: SlotPool;
  /** Whether an instance is served (its state is not read when it is not). */
  readonly serves?: (instance: IncusInstance) => boolean;
}

/**
 * The read a request's lead asks for, called when it starts (it has its worker) and answering with
 * `readAt`, the enricher's count of events then. An instance read gives its worker back once its
 * instance and state calls answered (`release`): a wait for the address that follows holds none,
 * and each poll takes one of its own.
 */
export function performRead(
  reader: ObservableIncusReader,
  request: ReadRequest,
  readAt: number,
  release: () => void,
  options: PerformReadOptions,
): Observable<Stamped> {
  const stamp = map((answer: ReadAnswer): Stamped => ({ answer, readAt }));
  switch (request.kind) {
    case 'instance':
      return readInstance(reader, request, {
        ipTimeout: options.ipTimeout,
        scheduler: options.scheduler,
        slots: options.slots,
        onFirstAnswer: release,
        serves: options.serves,
      }).pipe(stamp);
    case 'network':
      return reader.network$(request.project, request.name).pipe(stamp);
    case 'project':
      return reader.project$(request.name).pipe(stamp);
  }
}
