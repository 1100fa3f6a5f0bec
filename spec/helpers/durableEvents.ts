import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Subscription } from 'rxjs';
import { EventPayload } from '../../lib/enricher/output/payload';
import type { FakeIncus } from './FakeIncus';
import { decodeEventPayload } from '../../lib/enricher/output/payloadDecoder';
import { readStateSnapshot } from '../../streams/jetstream/stateBucket';
import { DeliverPolicy, JsMsg, readToEnd, streamMessages } from '../../streams/jetstream/streamReading';

/** One message of the enricher's stream, as a consumer reads it. */
export interface StreamRecord {
  streamSeq: number;
  subject: string;
  id: string;
  /** `Rxfleet-Instance-Seq` (instance events). */
  seq: number | undefined;
  payload: EventPayload;
}

function record(m: JsMsg): StreamRecord {
  const decoded = decodeEventPayload(m.data);
  if (!decoded.ok) throw new Error(`stream message ${m.seq} is not an enriched event: ${decoded.reason}`);
  const header = m.headers?.get('Rxfleet-Instance-Seq');
  const seq = header === undefined || header === '' ? undefined : Number(header);
  if (seq !== decoded.value.instance_seq)
    throw new Error(`stream message ${m.seq}: header sequence ${header}, payload ${decoded.value.instance_seq}`);
  return { streamSeq: m.seq, subject: m.subject, id: m.headers?.get('Nats-Msg-Id') ?? '', seq, payload: decoded.value };
}

/** Every message the stream holds, in order. */
export async function readStream(nc: NatsConnection, stream = 'INCUS_EVENTS'): Promise<StreamRecord[]> {
  const out: StreamRecord[] = [];
  await readToEnd(nc, stream, { deliver_policy: DeliverPolicy.All }, (m) => out.push(record(m)));
  return out;
}

/** What a count of every instance event by its sequence found. */
export interface SequenceReport {
  /** `project/name: missing 4..5` for each sequence never seen that the stream does not explain (removed by its limits). */
  gaps: string[];
  /** `project/name#3 x2`: a sequence received more than once. */
  duplicates: string[];
  /** Instance events received (repeats included). */
  events: number;
  /** Each instance's last sequence. */
  last: Map<string, number>;
}

/**
 * Counts instance events by their sequence: every sequence from 1 (or from the first one seen,
 * when the stream has dropped its oldest messages, `firstStreamSeq` > 1) to each instance's last
 * must be there, each once.
 */
export function countSequences(records: readonly StreamRecord[], firstStreamSeq = 1): SequenceReport {
  const seen = new Map<string, number[]>();
  let events = 0;
  for (const r of records) {
    if (r.payload.kind !== 'instance' || r.seq === undefined) continue;
    events++;
    const key = `${r.payload.project}/${r.payload.name}`;
    seen.set(key, [...(seen.get(key) ?? []), r.seq]);
  }
  const gaps: string[] = [];
  const duplicates: string[] = [];
  const last = new Map<string, number>();
  for (const [key, seqs] of seen) {
    const sorted = [...seqs].sort((a, b) => a - b);
    last.set(key, sorted[sorted.length - 1]);
    const counts = new Map<number, number>();
    for (const s of seqs) counts.set(s, (counts.get(s) ?? 0) + 1);
    for (const [s, n] of counts) if (n > 1) duplicates.push(`${key}#${s} x${n}`);
    // What the stream dropped from its front explains what is missing below the first seen.
    const from = firstStreamSeq > 1 ? sorted[0] : 1;
    for (let s = from; s <= sorted[sorted.length - 1]; s++) if (!counts.has(s)) gaps.push(`${key}: missing ${s}`);
  }
  return { gaps, duplicates, events, last };
}

/**
 * A consumer counting every event of the stream: it reads from the start, can be stopped (a
 * consumer down for a while) and started again from where it was, as a durable consumer would.
 */
export class CountingConsumer {
  readonly records: StreamRecord[] = [];
  private subscription: Subscription | undefined;
  private next = 1;
  private failed: unknown;

  constructor(
    private readonly nc: NatsConnection,
    private readonly stream = 'INCUS_EVENTS',
  ) {}

  start(): void {
    this.subscription = streamMessages(this.nc, this.stream, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: this.next,
    }).subscribe((m) => {
      this.records.push(record(m));
      this.next = m.seq + 1;
    });
  }

  stop(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
  }

  /** Whether it has read everything the stream holds now. */
  async caughtUp(): Promise<boolean> {
    if (this.failed !== undefined) throw new Error(`the counting consumer failed: ${String(this.failed)}`);
    // The stream's info may not be had for a moment (a server restarting): not caught up yet.
    const info = await jetstreamManager(this.nc)
      .then((jsm) => jsm.streams.info(this.stream))
      .catch(() => undefined);
    return info !== undefined && this.next > info.state.last_seq;
  }

  async report(): Promise<SequenceReport> {
    const { state } = await (await jetstreamManager(this.nc)).streams.info(this.stream);
    return countSequences(this.records, state.first_seq);
  }
}

/** An instance as the bucket (or a consumer, or Incus) describes it: running, and its global IPv4 addresses. */
export interface InstanceView {
  running: boolean;
  ipv4: string[];
}

/** The state bucket's live instances, `project/name` -> what its record says. */
export async function bucketInstances(nc: NatsConnection, bucket = 'INCUS_STATE'): Promise<Map<string, InstanceView & { seq: number }>> {
  const snapshot = await readStateSnapshot(nc, bucket);
  const out = new Map<string, InstanceView & { seq: number }>();
  for (const i of snapshot.instances) {
    const record = i.event.instance;
    out.set(`${i.project}/${i.name}`, {
      running: record?.running ?? false,
      ipv4: (record?.interfaces ?? []).flatMap((n) => n.ipv4).sort(),
      seq: i.seq,
    });
  }
  return out;
}

/** What a fake Incus says: `project/name` -> running and global IPv4 addresses. */
export function fakeView(fake: FakeIncus): Map<string, InstanceView> {
  const out = new Map<string, InstanceView>();
  for (const { project, name } of fake.world().instances) {
    let found: InstanceView = { running: false, ipv4: [] };
    // Latency 0: the fake answers at once.
    fake.instanceState$(project, name).subscribe((s) => {
      found = {
        running: s.status === 'Running',
        ipv4: Object.values(s.network ?? {})
          .flatMap((n) => n.addresses)
          .filter((a) => a.family === 'inet' && a.scope === 'global')
          .map((a) => a.address)
          .sort(),
      };
    });
    out.set(`${project}/${name}`, found);
  }
  return out;
}

/** Differences between two views of the fleet (empty when they agree). */
export function differences(expected: Map<string, InstanceView>, actual: Map<string, InstanceView>): string[] {
  const out: string[] = [];
  for (const [key, want] of expected) {
    const got = actual.get(key);
    if (got === undefined) out.push(`${key}: missing`);
    else if (got.running !== want.running || got.ipv4.join() !== want.ipv4.join())
      out.push(`${key}: ${JSON.stringify({ running: got.running, ipv4: got.ipv4 })}, expected ${JSON.stringify(want)}`);
  }
  for (const key of actual.keys()) if (!expected.has(key)) out.push(`${key}: should be gone`);
  return out;
}
