import { PoolResult } from '@rxfleet/operators';
import { errorMessage } from '../../choria/errors';
import { CycleError, CycleStep } from '../cycleError';
import { CycleTrace, HelperDecision, StepTrace, withoutSecret } from '../cycleTrace';
import type { BackoffEntry } from '../nodeBackoff';
import type { CycleResult, HostTicket, SightingSource } from '../pipeline';

/** The version of the record's shape: a reader skips a record of a version it does not know. */
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

/** What {@link cycleRecord} is made from. */
export interface CycleRecordParts {
  result: PoolResult<HostTicket, CycleResult>;
  /** The trace of the cycle that ran, if one did. */
  trace: CycleTrace | undefined;
  instance: string;
  site: string;
  /** Active-active: the claim's revision. */
  claimRevision?: number;
  /** The node's backoff after this cycle, if it waits one. */
  backoff?: BackoffEntry;
  /** The site's token: taken out of every message (a helper may echo its input into an error). */
  secret?: string;
  /** The cycle's clock (the scheduler's) now, and the wall clock now: times are turned from one to the other. */
  now: number;
  wallNow: number;
}

/**
 * The record of a finished ticket; undefined for a ticket that ran no cycle and failed no node (a
 * stale ticket skipped, a node another instance holds): those say nothing about the node.
 */
export function cycleRecord(parts: CycleRecordParts): CycleRecord | undefined {
  const { result, trace, instance, site, claimRevision, backoff, now, wallNow, secret = '' } = parts;
  const { outcome, ticket } = result;
  if (outcome.status === 'skipped') return undefined;
  if (outcome.status === 'done' && outcome.value === 'claimed') return undefined;
  const wall = (at: number): string => new Date(wallNow - (now - at)).toISOString();
  const error = outcome.status === 'failed' ? failure(outcome.error, secret) : undefined;
  const steps = (trace?.steps ?? []).map((s) => (s.error === undefined ? s : { ...s, error: withoutSecret(s.error, secret) }));
  const record: CycleRecord = {
    type: 'cycle',
    v: RECORD_VERSION,
    node: ticket.key,
    instance,
    site,
    sighting: { via: ticket.value.via, at: wall(ticket.admittedAt), ...(ticket.value.readmission === true ? { readmission: true } : {}) },
    ...(trace !== undefined ? { started: wall(trace.startedAt), ms: trace.ms ?? now - trace.startedAt } : {}),
    ended: wall(now),
    outcome: outcome.status === 'failed' ? 'failed' : outcome.value,
    steps,
    ...(trace?.helper !== undefined ? { decision: trace.helper } : {}),
    ...(error !== undefined ? { error } : {}),
    ...(claimRevision !== undefined ? { claim: { revision: claimRevision } } : {}),
    ...(backoff !== undefined
      ? { backoff: { failures: backoff.failures, failingSince: wall(backoff.failingSince), retryAfter: wall(backoff.until) } }
      : {}),
    ...(trace !== undefined && trace.run > 1 ? { runs: trace.run } : {}),
  };
  return record;
}

function failure(error: unknown, secret: string): NonNullable<CycleRecord['error']> {
  if (!(error instanceof CycleError)) return { message: withoutSecret(errorMessage(error), secret) };
  const message = withoutSecret(error.message, secret);
  return { step: error.step, message, ...(error.nodeMayBeConfigured ? { nodeMayBeConfigured: true } : {}) };
}

/**
 * Whether `value` is a cycle record this version can read: a reader of the stream meets records of
 * other versions and other writers, and skips what it cannot read rather than failing.
 */
export function isCycleRecord(value: unknown): value is CycleRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Partial<CycleRecord>;
  return (
    r.type === 'cycle' &&
    r.v === RECORD_VERSION &&
    typeof r.node === 'string' &&
    typeof r.instance === 'string' &&
    typeof r.ended === 'string' &&
    typeof r.outcome === 'string' &&
    Array.isArray(r.steps)
  );
}
