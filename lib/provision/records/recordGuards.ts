import { CycleRecord, InstanceRecord, RECORD_VERSION } from './recordTypes';

/**
 * Whether `value` is a cycle record this version can read: a reader of the stream meets records of
 * other versions and other writers, and skips what it cannot read rather than failing. Apart from
 * the record's making (`cycleRecord.ts`), so a reader loads none of the cycle.
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

/** Whether `value` is an instance record this version can read. */
export function isInstanceRecord(value: unknown): value is InstanceRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Partial<InstanceRecord>;
  return r.type === 'instance' && r.v === RECORD_VERSION && typeof r.instance === 'string' && typeof r.at === 'string';
}
