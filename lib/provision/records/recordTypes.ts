import type { CycleStep } from '../cycle/cycleError';
import type { HelperDecision, StepTrace } from '../cycle/cycleTrace';
import type { CycleResult } from '../cycle/cycleResult';
import type { SightingSource } from '../sightings/sighting';

/**
 * The records' shapes (DECISIONS P21): what the stream holds and `rxfleet status` reads. Apart
 * from their making, so a reader loads none of the provisioning cycle.
 */

/** The version of the records' shape: a reader skips a record of a version it does not know. */
export const RECORD_VERSION = 1;

/**
 * One node's cycle as one instance ran it (DECISIONS P21): what sighted the node, each step with
 * its outcome and duration, the helper's decision without secrets, the error, the claim's revision
 * in active-active, and the backoff the node now waits out. Times are ISO 8601 on the wall clock.
 */
export interface CycleRecord {
  readonly type: 'cycle';
  readonly v: typeof RECORD_VERSION;
  readonly node: string;
  /** The instance that ran it (its Choria identity). */
  readonly instance: string;
  readonly site: string;
  readonly sighting: { readonly via: SightingSource; readonly at: string; readonly readmission?: true };
  /** When the cycle started; absent when none ran (refused before its first step, as a stale sighting in the claim stage). */
  readonly started?: string;
  readonly ended: string;
  /** How long it ran, ms. */
  readonly ms?: number;
  /** How it ended: the cycle's result, or `failed`. */
  readonly outcome: CycleResult | 'failed';
  readonly steps: readonly StepTrace[];
  readonly decision?: HelperDecision;
  readonly error?: { readonly step?: CycleStep; readonly message: string; readonly nodeMayBeConfigured?: true };
  /** Active-active: the revision at which this instance's claim on the node was written. */
  readonly claim?: { readonly revision: number };
  /** The node's backoff after this cycle (P22): its failures in a row and when it may be tried again. */
  readonly backoff?: { readonly failures: number; readonly failingSince: string; readonly retryAfter: string };
  /** Runs of the cycle under one claim (active-active runs a kept node's again); absent when 1. */
  readonly runs?: number;
}

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
