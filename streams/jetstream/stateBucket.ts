/**
 * The state bucket on the wire: read whole (a consistent snapshot: every key's last value as of one
 * moment, the watermark among them), and written one key at a time (a record, or a delete marker
 * carrying the instance's last sequence), as the KV API writes, so `nats kv` and nats.js read it.
 */
import { NatsConnection, headers } from '@nats-io/transport-node';
import { decodeEventPayload } from '../../lib/enricher/output/payloadDecoder';
import { FleetInstance, GoneInstance } from '../../lib/enricher/follow/fleetLedger';
import { INSTANCE_SEQ_HEADER, WATERMARK_KEY, parseStateKey } from '../../lib/enricher/jetstream/eventIdentity';
import { StateWrite, stateHeaders } from '../../lib/enricher/jetstream/stateLedger';
import { DeliverPolicy, readToEnd } from './streamReading';
import { bucketStream } from './eventStream';

/** The bucket as one moment saw it. */
export interface StateSnapshot {
  readonly instances: FleetInstance[];
  readonly gone: GoneInstance[];
  /** The stream sequence the bucket is complete to (0 when it has never said). */
  readonly watermark: number;
  /** Each live key's value as stored (what a write that only moves the sequence on carries). */
  readonly records: Map<string, string>;
  /** Values that are not an enriched event, or keys that are not an instance's (counted, skipped). */
  readonly malformed: number;
}

/** The watermark key's value. */
interface Watermark {
  stream?: string;
  seq?: number;
}

const decoder = new TextDecoder();

/**
 * Every key's last message as it comes from the bucket's stream (a snapshot read, or a follower
 * kept up to date): the raw value is kept and decoded only when a snapshot is asked for.
 */
export class BucketView {
  private readonly latest = new Map<string, { seq: number; value?: Uint8Array }>();
  private mark = 0;

  constructor(private readonly bucket: string) {}

  /** Keys held (the watermark aside), deleted ones too. */
  get size(): number {
    return this.latest.size;
  }

  /** One message of the bucket's stream, in stream order. */
  take(m: { subject: string; data: Uint8Array; headers?: { get(name: string): string } | undefined }): void {
    const key = m.subject.slice(`$KV.${this.bucket}.`.length);
    const op = m.headers?.get('KV-Operation') ?? '';
    if (key === WATERMARK_KEY) {
      try {
        this.mark = Math.max(this.mark, Number((JSON.parse(decoder.decode(m.data)) as Watermark).seq) || 0);
      } catch {
        // A watermark that is not ours says nothing: the stream is then read from its start.
      }
      return;
    }
    const seq = Number(m.headers?.get(INSTANCE_SEQ_HEADER) ?? '0') || 0;
    this.latest.set(key, op === 'DEL' || op === 'PURGE' ? { seq } : { seq, value: m.data });
  }

  /** The view as a snapshot: records decoded, what does not decode counted in `malformed`. */
  snapshot(): StateSnapshot {
    const instances: FleetInstance[] = [];
    const gone: GoneInstance[] = [];
    const records = new Map<string, string>();
    let malformed = 0;
    for (const [key, entry] of this.latest) {
      const at = parseStateKey(key);
      if (at === undefined) {
        malformed++;
        continue;
      }
      if (entry.value === undefined) {
        gone.push({ ...at, seq: entry.seq });
        continue;
      }
      const decoded = decodeEventPayload(entry.value);
      if (!decoded.ok) {
        malformed++;
        continue;
      }
      instances.push({ ...at, seq: entry.seq || (decoded.value.instance_seq ?? 0), event: decoded.value });
      records.set(key, decoder.decode(entry.value));
    }
    return { instances, gone, watermark: this.mark, records, malformed };
  }
}

/** The bucket's stream, from each key's last message. */
export function bucketReading(bucket: string): { stream: string; options: { filter_subjects: string; deliver_policy: DeliverPolicy } } {
  return { stream: bucketStream(bucket), options: { filter_subjects: `$KV.${bucket}.>`, deliver_policy: DeliverPolicy.LastPerSubject } };
}

/**
 * Reads every key's last value: an ordered consumer from each key's last message, to the end, so
 * what it returns is the bucket at one moment (a key written while it reads comes as its newer
 * value). A value that does not decode as an enriched event is counted in `malformed` and left out.
 */
export async function readStateSnapshot(nc: NatsConnection, bucket: string): Promise<StateSnapshot> {
  const view = new BucketView(bucket);
  const { stream, options } = bucketReading(bucket);
  await readToEnd(nc, stream, options, (m) => view.take(m));
  return view.snapshot();
}

interface PubAck {
  seq?: number;
  error?: { code?: number; err_code?: number; description?: string };
}

async function publishAcked(
  nc: NatsConnection,
  subject: string,
  data: string,
  extra: Array<[string, string]>,
  timeoutMs: number,
): Promise<number> {
  const h = headers();
  for (const [name, value] of extra) h.set(name, value);
  const reply = await nc.request(subject, data, { headers: h, timeout: timeoutMs });
  const ack = JSON.parse(decoder.decode(reply.data)) as PubAck;
  if (ack.error !== undefined)
    throw new Error(`${subject}: ${ack.error.description ?? 'refused'} (${ack.error.err_code ?? ack.error.code ?? 0})`);
  return ack.seq ?? 0;
}

/** Writes one key (a record, or a delete marker carrying the instance's last sequence); resolves when the bucket has it. */
export function writeState(nc: NatsConnection, bucket: string, write: StateWrite, timeoutMs: number): Promise<number> {
  return publishAcked(nc, `$KV.${bucket}.${write.key}`, write.value ?? '', stateHeaders(write), timeoutMs);
}

/** Writes the watermark: every instance event the stream holds up to `seq` is in the bucket. */
export function writeWatermark(nc: NatsConnection, bucket: string, stream: string, seq: number, timeoutMs: number): Promise<number> {
  return publishAcked(nc, `$KV.${bucket}.${WATERMARK_KEY}`, JSON.stringify({ stream, seq }), [], timeoutMs);
}
