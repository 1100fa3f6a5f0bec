import { PoolResult } from '@rxfleet/operators';
import { errorMessage } from '../../choria/errors';
import { CycleError } from '../cycle/cycleError';
import { CycleTrace, withoutSecret } from '../cycle/cycleTrace';
import type { BackoffEntry } from '../backoff/nodeBackoff';
import type { CycleResult } from '../cycle/cycleResult';
import type { HostTicket } from '../sightings/sighting';
import { CycleRecord, RECORD_VERSION } from './recordTypes';
import { definedFields } from '../../definedFields';

export { RECORD_VERSION } from './recordTypes';
export type { CycleRecord } from './recordTypes';
export { isCycleRecord } from './recordGuards';

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
    ...definedFields({ decision: trace?.helper, error }),
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
