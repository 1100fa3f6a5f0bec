/**
 * The state bucket's writes, as state without I/O: what each instance event the stream
 * acknowledged changes in the bucket (its record, or a delete marker), at most one write in flight
 * per key with the newest waiting behind it, and the watermark: the stream sequence up to which
 * the bucket holds every instance event, which is what lets a consumer read the bucket and then
 * follow the stream with no gap.
 */
import { INSTANCE_SEQ_HEADER, stateKey } from './eventIdentity';

/** One write to the state bucket. */
export interface StateWrite {
  /** The bucket key (`<project>.<name>`). */
  readonly key: string;
  /** The record's JSON, or `undefined` for a delete marker. */
  readonly value: string | undefined;
  /** The instance's sequence the write brings the key to (its `Rxfleet-Instance-Seq` header). */
  readonly seq: number;
  /** The stream sequence of the event it writes (the latest folded into it). */
  readonly streamSeq: number;
}

/** An event the stream acknowledged, as the ledger needs it. */
export interface AckedEvent {
  readonly streamSeq: number;
  readonly kind: string;
  readonly project: string;
  readonly name: string;
  readonly action: string;
  readonly oldName?: string | undefined;
  /** Instance events: the sequence it carries. */
  readonly seq?: number | undefined;
  /** A rename's old name's last sequence. */
  readonly oldSeq?: number | undefined;
  /** The payload as stored (with `instance_seq`). */
  readonly payload: string;
  /** Whether it carries an instance record. */
  readonly record: boolean;
}

interface KeyState {
  /** The write under way, and the oldest stream sequence folded into it. */
  sending?: StateWrite;
  sendingFrom?: number;
  /** The newest write waiting behind it, and the oldest stream sequence folded into it. */
  next?: StateWrite;
  nextFrom?: number;
}

/**
 * The ledger. A key's writes go one at a time in the order their events were acknowledged; a
 * newer write replaces one still waiting (the bucket keeps the last record). A failed write is
 * retried by the caller ({@link failed}) before anything newer about its key. The watermark only
 * grows.
 */
export class StateLedger {
  private readonly keys = new Map<string, KeyState>();
  private readonly ready: string[] = [];
  /** The highest stream sequence handed in. */
  private acked = 0;
  private mark: number;
  /** Each live key's last record: a write that only moves the sequence on (a failed read) carries it. */
  private readonly records: Map<string, string>;

  /**
   * @param watermark Where the bucket is complete to already (the recovery's end).
   * @param records Each live key's record in the bucket now (what the recovery read).
   */
  constructor(watermark = 0, records: Map<string, string> = new Map()) {
    this.mark = watermark;
    this.acked = watermark;
    this.records = records;
  }

  /** The writes an acknowledged event makes: its record (or a delete marker), and a rename's old name's marker. */
  take(event: AckedEvent): void {
    this.acked = Math.max(this.acked, event.streamSeq);
    if (event.kind !== 'instance' || event.seq === undefined) return;
    if (event.oldName !== undefined && event.oldName !== event.name) {
      const old = stateKey(event.project, event.oldName);
      this.records.delete(old);
      this.enqueue({ key: old, value: undefined, seq: event.oldSeq ?? 0, streamSeq: event.streamSeq });
    }
    const key = stateKey(event.project, event.name);
    if (event.action === 'instance-deleted') this.records.delete(key);
    else if (event.record) this.records.set(key, event.payload);
    // An event with no record (a failed read) moves the key's sequence on and keeps its record; a
    // key with no record yet keeps the event itself until a read lands.
    const value = event.action === 'instance-deleted' ? undefined : (this.records.get(key) ?? event.payload);
    this.enqueue({ key, value, seq: event.seq, streamSeq: event.streamSeq });
  }

  /** Every event up to `streamSeq` has been handed in (a recovery read the stream to it). */
  reached(streamSeq: number): void {
    this.acked = Math.max(this.acked, streamSeq);
  }

  /** The writes to start now (one per key at most in flight), oldest key first. */
  writable(): StateWrite[] {
    const out: StateWrite[] = [];
    for (const key of this.ready.splice(0)) {
      const state = this.keys.get(key);
      if (state === undefined || state.sending !== undefined || state.next === undefined) continue;
      state.sending = state.next;
      state.sendingFrom = state.nextFrom ?? state.next.streamSeq;
      state.next = undefined;
      state.nextFrom = undefined;
      out.push(state.sending);
    }
    return out;
  }

  /** `write` landed. */
  written(write: StateWrite): void {
    const state = this.keys.get(write.key);
    if (state?.sending !== write) return;
    state.sending = undefined;
    state.sendingFrom = undefined;
    if (state.next !== undefined) this.ready.push(write.key);
    else this.keys.delete(write.key);
  }

  /** `write` failed: it is the next write for its key again (unless a newer one waits, which carries more). */
  failed(write: StateWrite): void {
    const state = this.keys.get(write.key);
    if (state?.sending !== write) return;
    const from = state.sendingFrom ?? write.streamSeq;
    state.sending = undefined;
    state.sendingFrom = undefined;
    if (state.next === undefined) {
      state.next = write;
      state.nextFrom = from;
    } else state.nextFrom = Math.min(state.nextFrom ?? from, from);
    this.ready.push(write.key);
  }

  /**
   * The watermark, given `floor` (the publish line's: below it, nothing unacknowledged): the
   * highest stream sequence such that every instance event at or below it is in the bucket. It
   * never goes down.
   */
  watermark(floor: number): number {
    let bound = Math.min(this.acked, floor);
    for (const state of this.keys.values()) {
      if (state.sending !== undefined) bound = Math.min(bound, (state.sendingFrom ?? state.sending.streamSeq) - 1);
      if (state.next !== undefined) bound = Math.min(bound, (state.nextFrom ?? state.next.streamSeq) - 1);
    }
    this.mark = Math.max(this.mark, bound);
    return this.mark;
  }

  /** Writes not yet landed. */
  get pending(): number {
    let n = 0;
    for (const state of this.keys.values()) n += (state.sending === undefined ? 0 : 1) + (state.next === undefined ? 0 : 1);
    return n;
  }

  private enqueue(write: StateWrite): void {
    const state = this.keys.get(write.key) ?? {};
    this.keys.set(write.key, state);
    state.nextFrom = state.next === undefined ? write.streamSeq : Math.min(state.nextFrom ?? write.streamSeq, write.streamSeq);
    state.next = write;
    if (state.sending === undefined) this.ready.push(write.key);
  }
}

/** The headers of a state write: its sequence, and `KV-Operation: DEL` for a delete marker. */
export function stateHeaders(write: StateWrite): Array<[string, string]> {
  const headers: Array<[string, string]> = [[INSTANCE_SEQ_HEADER, String(write.seq)]];
  if (write.value === undefined) headers.push(['KV-Operation', 'DEL']);
  return headers;
}
