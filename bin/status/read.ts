import type { NatsConnection } from '@nats-io/transport-node';
import { claimKey } from '../../lib/provision/claims/claimKey';
import type { CycleRecord } from '../../lib/provision/records/cycleRecord';
import { isCycleRecord, isInstanceRecord } from '../../lib/provision/records/recordGuards';
import { allRecordsSubject, nodeSubject } from '../../lib/provision/records/recordSubjects';
import type { ClaimEntry, StatusInputs } from '../../lib/provision/status/fleetStatus';
import { StreamMissingError, jsonOf, readBucket, readStream } from '../../streams/records/readStream';

/** Where the records, the claims and the election live. */
export interface FleetSources {
  recordsStream: string;
  recordsSubject: string;
  claimsBucket: string;
  electionBucket: string;
  /** The JetStream API prefix to read them through (`$JS.API` on the account that holds them). */
  apiPrefix: string;
  timeoutMs?: number;
}

/** What was read, and a line for each thing that could not be. */
export interface FleetRead extends StatusInputs {
  notes: string[];
  /** False when nothing at all could be read (no stream, no bucket). */
  found: boolean;
}

/** Undefined for a stream or bucket that is not there (noted), rethrows anything else. */
async function optional<T>(what: Promise<T>, notes: string[], missing: string): Promise<T | undefined> {
  try {
    return await what;
  } catch (error) {
    if (error instanceof StreamMissingError) {
      notes.push(missing);
      return undefined;
    }
    throw error;
  }
}

/**
 * Everything `rxfleet status` shows, read with no daemon to ask: the last record of each instance
 * and of each node (deliver-last-per-subject), the claims bucket's live keys and the election key.
 * A stream or bucket that is not there is a note, not an error (a site without active-active has
 * no claims bucket); any other failure (no rights, no JetStream, a timeout) throws.
 */
export async function readFleet(nc: NatsConnection, sources: FleetSources): Promise<FleetRead> {
  const { recordsStream: stream, recordsSubject: subject, apiPrefix, timeoutMs } = sources;
  const notes: string[] = [];
  const noRecords = `the records stream ${stream} is not there: set rxfleet.records: true (and make the stream, or records_create: true)`;
  // Asked all at once: each read is a few round trips to JetStream, and an operator waits for all.
  // The instances' records and the nodes' in one read, the newest of each subject.
  const [records, claims, election] = await Promise.all([
    optional(readStream(nc, { stream, subject: allRecordsSubject(subject), apiPrefix, timeoutMs, last: true }), notes, noRecords),
    optional(readBucket(nc, { bucket: sources.claimsBucket, apiPrefix, timeoutMs }), [], ''),
    optional(readBucket(nc, { bucket: sources.electionBucket, apiPrefix, timeoutMs }), [], ''),
  ]);
  const leader = election?.entries.find((e) => e.key === 'provisioner');
  const ofKind = (kind: 'instance' | 'node'): unknown[] =>
    (records ?? []).filter((m) => m.subject.startsWith(`${subject}.${kind}.`)).map(jsonOf);
  return {
    now: Date.now(),
    instances: ofKind('instance').filter(isInstanceRecord),
    nodes: ofKind('node').filter(isCycleRecord),
    ...(claims !== undefined
      ? { claims: { entries: claims.entries.map((e): ClaimEntry => ({ node: e.key, owner: e.value, at: e.time })), ttlMs: claims.ttlMs } }
      : {}),
    ...(leader !== undefined && election !== undefined
      ? { election: { leader: leader.value, at: leader.time, ttlMs: election.ttlMs } }
      : {}),
    notes,
    found: records !== undefined || claims !== undefined || election !== undefined,
  };
}

/** One node's recorded cycles, newest first, and its claim if one is held. */
export interface NodeHistory {
  records: CycleRecord[];
  claim?: ClaimEntry;
  notes: string[];
  found: boolean;
}

/** Every cycle of `node` the stream still holds (up to `records_per_node`), newest first, and its claim. */
export async function readNodeHistory(nc: NatsConnection, sources: FleetSources, node: string): Promise<NodeHistory> {
  const { recordsStream: stream, recordsSubject: subject, apiPrefix, timeoutMs } = sources;
  const notes: string[] = [];
  const [messages, claims] = await Promise.all([
    optional(
      readStream(nc, { stream, subject: nodeSubject(subject, node), apiPrefix, timeoutMs }),
      notes,
      `the records stream ${stream} is not there: set rxfleet.records: true (and make the stream, or records_create: true)`,
    ),
    optional(readBucket(nc, { bucket: sources.claimsBucket, apiPrefix, timeoutMs }), [], '').catch((error: unknown) => {
      notes.push(`the claims bucket could not be read: ${error instanceof Error ? error.message : String(error)}`);
      return undefined;
    }),
  ]);
  const key = claimKey(node);
  const entry = claims?.entries.find((e) => e.key === key && Date.now() - e.time < claims.ttlMs);
  const records = (messages ?? [])
    .map(jsonOf)
    .filter(isCycleRecord)
    .filter((r) => r.node === node)
    .reverse();
  return {
    records,
    ...(entry !== undefined ? { claim: { node, owner: entry.value, at: entry.time } } : {}),
    notes,
    found: messages !== undefined,
  };
}
