import { RECORD_VERSION } from './cycleRecord';

/** How an instance shares the fleet. */
export type InstanceMode = 'single' | 'leader_election' | 'active-active';

/** A count of nodes in one state, with the one in it longest. */
export interface NodeCount {
  readonly count: number;
  /** The node in this state longest, and since when (ISO 8601). */
  readonly oldest?: { readonly node: string; readonly since: string };
}

/**
 * What one instance is doing, appended every few seconds beside its cycle records (DECISIONS
 * P21), so `rxfleet status` sees every instance, leader, standby or active, without asking it:
 * its role, its queue, its cycles in flight, its failing nodes. The last one of each instance is
 * what status reads; its age says whether the instance is still there.
 */
export interface InstanceRecord {
  readonly type: 'instance';
  readonly v: typeof RECORD_VERSION;
  readonly instance: string;
  readonly site: string;
  readonly version: string;
  readonly mode: InstanceMode;
  /** With leader_election: whether it leads now. */
  readonly leader: boolean;
  readonly paused: boolean;
  readonly state: 'running' | 'stopping' | 'stopped';
  readonly connection: string;
  readonly workers: number;
  /** Identities admission holds (queued, running, settling). */
  readonly held: number;
  /** Admitted, their cycle not started. */
  readonly waiting: NodeCount;
  /** Cycles running now. */
  readonly inFlight: NodeCount;
  /** Nodes whose last cycles failed (their backoff, P22); `oldest` is the one failing longest. */
  readonly failing: NodeCount;
  /** The backoff's ceiling, ms (0: off). */
  readonly backoffCeilingMs: number;
  /** When it started, and when this was written. */
  readonly startedAt: string;
  readonly at: string;
  /** How often it writes one, ms: a record older than a few of these is from an instance gone. */
  readonly every: number;
}

/** Whether `value` is an instance record this version can read. */
export function isInstanceRecord(value: unknown): value is InstanceRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Partial<InstanceRecord>;
  return r.type === 'instance' && r.v === RECORD_VERSION && typeof r.instance === 'string' && typeof r.at === 'string';
}

/**
 * The node in a collection longest, from entries in the order they entered (a Map's order), or
 * undefined; `skip` passes over entries that no longer count.
 */
export function oldestOf(
  entries: Iterable<[string, number]>,
  wall: (at: number) => string,
  skip: (node: string) => boolean = () => false,
): NodeCount {
  let count = 0;
  let oldest: { node: string; at: number } | undefined;
  for (const [node, at] of entries) {
    if (skip(node)) continue;
    count++;
    if (oldest === undefined || at < oldest.at) oldest = { node, at };
  }
  return oldest === undefined ? { count } : { count, oldest: { node: oldest.node, since: wall(oldest.at) } };
}
