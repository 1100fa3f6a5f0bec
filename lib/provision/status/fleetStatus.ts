import type { CycleRecord } from '../records/cycleRecord';
import type { InstanceMode, InstanceRecord, NodeCount } from '../records/instanceRecord';
import { definedFields } from '../../definedFields';

/** How many of its own periods an instance may be silent before status calls it gone. */
export const GONE_AFTER_PERIODS = 3;

/** A claim in the claims bucket: the node's key, the instance holding it, when it was written (wall ms). */
export interface ClaimEntry {
  readonly node: string;
  readonly owner: string;
  readonly at: number;
}

/** What status reads, with no daemon to ask. */
export interface StatusInputs {
  /** Wall clock, ms. */
  now: number;
  /** The last record of each instance. */
  instances: readonly InstanceRecord[];
  /** The last cycle record of each node. */
  nodes: readonly CycleRecord[];
  /** The claims bucket's live keys (active-active); undefined when there is no bucket. */
  claims?: { entries: readonly ClaimEntry[]; ttlMs: number };
  /** The election key (leader_election); undefined when there is no bucket or no key. */
  election?: { leader: string; at: number; ttlMs: number };
}

/** One instance as status shows it. */
export interface InstanceStatus {
  readonly instance: string;
  /** leader or standby (leader_election), active (active-active), single, or gone (silent too long). */
  readonly role: 'leader' | 'standby' | 'active' | 'single' | 'gone';
  readonly mode: InstanceMode | 'unknown';
  /** Ms since its last record; undefined for an instance known only from the election (another provisioner, or records off). */
  readonly seenMsAgo?: number;
  readonly paused?: boolean;
  readonly waiting?: NodeCount;
  readonly inFlight?: NodeCount;
  readonly failing?: NodeCount;
  /** Claims it holds in the bucket (active-active). */
  readonly claims?: number;
  readonly version?: string;
  readonly site?: string;
}

/** The fleet now, as status says it. */
export interface FleetStatus {
  readonly at: string;
  readonly instances: readonly InstanceStatus[];
  /** Admitted and not started, summed over the instances still there. */
  readonly waiting: NodeCount;
  /** Cycles running now, summed likewise. */
  readonly inFlight: NodeCount;
  /** Nodes whose last cycle failed, whichever instance ran it; `oldest` is the one failing longest. */
  readonly failing: NodeCount & { readonly nextTry?: string };
  /** Nodes by how their last recorded cycle ended. */
  readonly lastOutcomes: Readonly<Record<string, number>>;
  readonly election?: { readonly leader: string; readonly writtenMsAgo: number; readonly expiresInMs: number };
  readonly claims?: { readonly held: number; readonly ttlMs: number };
}

function merged(counts: readonly (NodeCount | undefined)[]): NodeCount {
  let count = 0;
  let oldest: NodeCount['oldest'];
  for (const c of counts) {
    if (c === undefined) continue;
    count += c.count;
    if (c.oldest !== undefined && (oldest === undefined || c.oldest.since < oldest.since)) oldest = c.oldest;
  }
  return oldest === undefined ? { count } : { count, oldest };
}

/**
 * The fleet's state from what the stream and the buckets hold (DECISIONS P21): each instance with
 * its role (the election key names the leader; an instance silent for {@link GONE_AFTER_PERIODS}
 * of its periods is gone), its queue, its cycles in flight, its failing nodes and the claims it
 * holds; the nodes waiting and in flight summed over the instances still there; the nodes whose
 * last cycle failed, whichever instance ran it, with the one failing longest and the next try.
 * Pure: the same inputs give the same answer.
 */
export function fleetStatus(inputs: StatusInputs): FleetStatus {
  const { now, claims, election } = inputs;
  const leaderNow = election !== undefined && now - election.at < election.ttlMs ? election.leader : undefined;
  const claimsBy = new Map<string, number>();
  for (const c of claims?.entries ?? [])
    if (now - c.at < (claims?.ttlMs ?? Infinity)) claimsBy.set(c.owner, (claimsBy.get(c.owner) ?? 0) + 1);

  const instances: InstanceStatus[] = [...inputs.instances]
    .sort((a, b) => a.instance.localeCompare(b.instance))
    .map((r) => {
      const seenMsAgo = Math.max(0, now - Date.parse(r.at));
      const gone = seenMsAgo > GONE_AFTER_PERIODS * r.every || r.state === 'stopped';
      const role: InstanceStatus['role'] = gone
        ? 'gone'
        : r.mode === 'active-active'
          ? 'active'
          : r.mode === 'leader_election'
            ? leaderNow === r.instance || (leaderNow === undefined && r.leader)
              ? 'leader'
              : 'standby'
            : 'single';
      return {
        instance: r.instance,
        role,
        mode: r.mode,
        seenMsAgo,
        paused: r.paused,
        waiting: r.waiting,
        inFlight: r.inFlight,
        failing: r.failing,
        ...(claims !== undefined ? { claims: claimsBy.get(r.instance) ?? 0 } : {}),
        version: r.version,
        site: r.site,
      };
    });
  // A leader with no record of its own: another provisioner (the Go one), or one with records off.
  if (leaderNow !== undefined && !instances.some((i) => i.instance === leaderNow))
    instances.unshift({ instance: leaderNow, role: 'leader', mode: 'leader_election' });
  const live = instances.filter((i) => i.role !== 'gone');

  const lastOutcomes: Record<string, number> = {};
  let failingCount = 0;
  let oldestFailing: { node: string; since: string; nextTry?: string } | undefined;
  for (const r of inputs.nodes) {
    lastOutcomes[r.outcome] = (lastOutcomes[r.outcome] ?? 0) + 1;
    if (r.outcome !== 'failed') continue;
    failingCount++;
    const since = r.backoff?.failingSince ?? r.ended;
    if (oldestFailing === undefined || since < oldestFailing.since)
      oldestFailing = { node: r.node, since, ...(r.backoff !== undefined ? { nextTry: r.backoff.retryAfter } : {}) };
  }

  return {
    at: new Date(now).toISOString(),
    instances,
    waiting: merged(live.map((i) => i.waiting)),
    inFlight: merged(live.map((i) => i.inFlight)),
    failing:
      oldestFailing === undefined
        ? { count: failingCount }
        : {
            count: failingCount,
            oldest: { node: oldestFailing.node, since: oldestFailing.since },
            ...definedFields({ nextTry: oldestFailing.nextTry }),
          },
    lastOutcomes,
    ...(election !== undefined
      ? { election: { leader: election.leader, writtenMsAgo: now - election.at, expiresInMs: election.at + election.ttlMs - now } }
      : {}),
    ...(claims !== undefined ? { claims: { held: [...claimsBy.values()].reduce((a, b) => a + b, 0), ttlMs: claims.ttlMs } } : {}),
  };
}
