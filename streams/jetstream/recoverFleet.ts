/**
 * What consumers were last told, read back before an enricher publishes (at start, or when a
 * standby takes over): the state bucket, then the stream past the bucket's watermark (what the
 * last run had acknowledged and not yet written into the bucket). Every instance's last sequence
 * comes from it, so the next event of each continues its sequence, and the records seed the
 * archive, so the first round says only what changed since.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { FleetInstance, FleetLedger } from '../../lib/enricher/follow/fleetLedger';
import { INSTANCE_SEQ_HEADER, instanceKey } from '../../lib/enricher/jetstream/eventIdentity';
import { AckedEvent } from '../../lib/enricher/jetstream/stateLedger';
import { decodeEventPayload } from '../../lib/enricher/output/payloadDecoder';
import { DeliverPolicy, readToEnd } from './streamReading';
import { StateSnapshot, readStateSnapshot } from './stateBucket';

/** What {@link recoverFleet} found. */
export interface RecoveredFleet {
  /** Live instances, as consumers last heard of them. */
  readonly instances: FleetInstance[];
  /** Each instance's last sequence (`<project>/<name>`), deleted ones too. */
  readonly seqs: Map<string, number>;
  /** The stream sequence read to: the bucket is complete to it once `repairs` are written. */
  readonly streamSeq: number;
  /** The bucket's own watermark, as read. */
  readonly watermark: number;
  /** The bucket's records as they are (the repairs write the rest). */
  readonly records: Map<string, string>;
  /** Events the stream acknowledged that the bucket lacks, in stream order. */
  readonly repairs: AckedEvent[];
  /** Bucket values and stream messages that are not enriched events (counted, skipped). */
  readonly malformed: number;
}

/** Where to read. */
export interface RecoverFleetConfig {
  nc: NatsConnection;
  stream: string;
  subjectPrefix: string;
  /** The state bucket; without one, only the sequences are recovered ({@link recoverSequences}). */
  bucket: string;
  /** The bucket as already read (a standby's follower); default read now. */
  snapshot?: StateSnapshot;
}

const decoder = new TextDecoder();

/** The bucket, then the stream from the bucket's watermark to its end. */
export async function recoverFleet(config: RecoverFleetConfig): Promise<RecoveredFleet> {
  const { nc, stream, subjectPrefix, bucket } = config;
  const snapshot = config.snapshot ?? (await readStateSnapshot(nc, bucket));
  const ledger = new FleetLedger();
  ledger.apply({ kind: 'snapshot', instances: snapshot.instances, gone: snapshot.gone, watermark: snapshot.watermark });
  const last = (await (await jetstreamManager(nc)).streams.info(stream)).state.last_seq;
  let streamSeq = Math.max(snapshot.watermark, last);
  let malformed = snapshot.malformed;
  const repairs: AckedEvent[] = [];
  if (last > snapshot.watermark) {
    await readToEnd(
      nc,
      stream,
      {
        filter_subjects: `${subjectPrefix}.*.instance.*.*`,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: snapshot.watermark + 1,
      },
      (m) => {
        streamSeq = Math.max(streamSeq, m.seq);
        const decoded = decodeEventPayload(m.data);
        if (!decoded.ok) {
          malformed++;
          return;
        }
        const event = decoded.value;
        const oldSeq = event.old_name === undefined ? undefined : ledger.sequences().get(instanceKey(event.project, event.old_name));
        const update = ledger.apply({ kind: 'event', event, streamSeq: m.seq });
        if (update?.kind !== 'change') return;
        repairs.push({
          streamSeq: m.seq,
          kind: 'instance',
          project: event.project,
          name: event.name,
          action: event.action,
          oldName: event.old_name,
          seq: event.instance_seq,
          oldSeq,
          payload: decoder.decode(m.data),
          record: event.instance !== undefined,
        });
      },
    );
  }
  return {
    instances: [...ledger.current()],
    seqs: new Map(ledger.sequences()),
    streamSeq,
    watermark: snapshot.watermark,
    records: snapshot.records,
    repairs,
    malformed,
  };
}

/**
 * Without a state bucket: each instance's last sequence in the stream, from the headers of the
 * last message on each of its subjects (no payload is read), and the stream's last sequence.
 */
export async function recoverSequences(
  nc: NatsConnection,
  stream: string,
  subjectPrefix: string,
): Promise<{ seqs: Map<string, number>; streamSeq: number }> {
  const seqs = new Map<string, number>();
  const prefixTokens = subjectPrefix.split('.').length;
  let streamSeq = (await (await jetstreamManager(nc)).streams.info(stream)).state.last_seq;
  await readToEnd(
    nc,
    stream,
    { filter_subjects: `${subjectPrefix}.*.instance.*.*`, deliver_policy: DeliverPolicy.LastPerSubject, headers_only: true },
    (m) => {
      streamSeq = Math.max(streamSeq, m.seq);
      const tokens = m.subject.split('.');
      const seq = Number(m.headers?.get(INSTANCE_SEQ_HEADER) ?? '');
      if (!Number.isSafeInteger(seq) || seq < 1) return;
      let project: string;
      let name: string;
      try {
        project = decodeURIComponent(tokens[prefixTokens]);
        name = decodeURIComponent(tokens[prefixTokens + 3]);
      } catch {
        return;
      }
      const key = instanceKey(project, name);
      seqs.set(key, Math.max(seqs.get(key) ?? 0, seq));
    },
  );
  return { seqs, streamSeq };
}
