/**
 * What the enricher reads, keyed so one read is in flight per subject, and what each read asks
 * of the server. Who waits on a read (an event's place, a round, a follow-up) is the owner's
 * business (`owner/requests.ts`): a read here knows only its subject.
 */
import { Observable, SchedulerLike, map } from 'rxjs';
import { SlotPool } from '@rxfleet/operators';
import { IncusInstance, IncusNetwork, IncusProject } from '../../incus/api';
import { ObservableIncusReader } from './observableReader';
import { InstanceAnswer, InstanceReadRequest, readInstance } from './readInstance';

interface Keyed {
  /** `ins/<project>/<name>`, `net/<owner>/<name>` or `prj/<name>/`: one read in flight per key. */
  readonly key: string;
}

/** A read of one instance, and what its answer must wait for. */
export interface InstanceSubject extends Keyed, InstanceReadRequest {
  readonly kind: 'instance';
}

/** A read of one network, owned by some project, as `project` sees it. */
export interface NetworkSubject extends Keyed {
  readonly kind: 'network';
  readonly project: string;
  readonly name: string;
}

/** A read of one project's own configuration. */
export interface ProjectSubject extends Keyed {
  readonly kind: 'project';
  readonly name: string;
}

/** What any read reads. */
export type ReadSubject = InstanceSubject | NetworkSubject | ProjectSubject;

/** What a read answers, by kind. */
export type ReadAnswer = InstanceAnswer | IncusNetwork | IncusProject;

/** An answer and where the enricher's count of events stood when its read began (see `Answer.readAt`). */
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
function strength(subject: ReadSubject): number {
  if (subject.kind !== 'instance') return 0;
  return subject.waitForRunning ? 2 : subject.wantInterfaces ? 1 : 0;
}

/** Whether `next` needs more than the read running for `running` will give: then it supersedes it. */
export function supersedes(next: ReadSubject, running: ReadSubject): boolean {
  return strength(next) > strength(running);
}

/**
 * Whether a request must be answered by a read that started after it arrived. Instance and network
 * reads must: a read already at the server may predate the change the request is about (a
 * configuration change during a start's wait for its address went out with the old one, was found
 * unchanged and was lost until the next round). Project reads need not: a round counts each of its
 * requests once, and the window is one short call.
 */
export function mustBeFresh(subject: ReadSubject): boolean {
  return subject.kind !== 'project';
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
 * `readAt`, the enricher's count of events then. An instance read gives its worker back
 * (`giveBack`, as `PerKeyReader` hands it) once its instance and state calls answered: a wait for
 * the address that follows holds none, and each poll takes one of its own.
 */
export function performRead(
  reader: ObservableIncusReader,
  subject: ReadSubject,
  readAt: number,
  giveBack: () => void,
  options: PerformReadOptions,
): Observable<Stamped> {
  const stamp = map((answer: ReadAnswer): Stamped => ({ answer, readAt }));
  switch (subject.kind) {
    case 'instance':
      return readInstance(reader, subject, {
        ipTimeout: options.ipTimeout,
        scheduler: options.scheduler,
        slots: options.slots,
        onFirstAnswer: giveBack,
        serves: options.serves,
      }).pipe(stamp);
    case 'network':
      return reader.network$(subject.project, subject.name).pipe(stamp);
    case 'project':
      return reader.project$(subject.name).pipe(stamp);
  }
}
