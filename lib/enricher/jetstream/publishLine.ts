/**
 * The JetStream output's line, as state without I/O: events wait in order (bounded, each object's
 * last word kept past the bound, as the core NATS hold does), are sent with a window of
 * acknowledgements outstanding, and leave only once the stream has acknowledged them. The socket
 * side (`streams/jetstream/jetstreamPublisher.ts`) asks it what to send and tells it what came
 * back.
 */
import { RingQueue } from '@rxfleet/operators';
import { EventSubject, instanceKey, messageId, withInstanceSeq } from './eventIdentity';

/** An event on its way to the stream, as the outputs hand it over. */
export interface DurableMessage {
  readonly subject: string;
  /** The payload's JSON, without `instance_seq` (the line adds it when the event is first sent). */
  readonly json: string;
  readonly about: EventSubject;
  /** The name before, on renames. */
  readonly oldName?: string;
  /** Whether the event carries an instance record (the state bucket keeps the last one). */
  readonly record: boolean;
}

/** Where a sent event stands: on its way, to be sent again, its duplicate acknowledgement being checked, in the stream, refused for good. */
export type FlightState = 'sending' | 'failed' | 'verifying' | 'acked' | 'refused';

/** An event that has been sent at least once: it has its sequence and its message id for good. */
export interface Flight {
  readonly message: DurableMessage;
  /** The instance's sequence (instance events). */
  readonly seq: number | undefined;
  /** A rename's old name's last sequence, for its delete marker in the state bucket. */
  readonly oldSeq: number | undefined;
  /** The instance key whose sequence it carries. */
  readonly key: string | undefined;
  /** The payload as sent: with `instance_seq` for instance events. */
  readonly data: string;
  /** Its `Nats-Msg-Id`: the same every time it is sent, but for a deliberate republish. */
  id: string;
  /**
   * The highest stream sequence acknowledged before it was first sent: whatever sequence the
   * stream gives it is higher, which is what bounds the state bucket's watermark.
   */
  readonly floor: number;
  /** Bumped at every send; an answer to an older attempt is ignored. */
  attempt: number;
  state: FlightState;
  streamSeq?: number;
  republish: number;
}

/** Options for {@link PublishLine}. */
export interface PublishLineOptions {
  /** Events waiting to be sent, at most (each object's last word is kept beyond it). */
  maxHeld: number;
  /** Events sent and not yet released, at most. */
  maxPending: number;
  /** Each instance's last sequence in the stream (what a restart or a takeover recovered). */
  seqs?: Map<string, number>;
  /** The stream's last sequence when the line starts (what the recovery read to). */
  streamSeq?: number;
  /** Told of every event dropped while waiting (pushed out and superseded, or abandoned). */
  onDropped?: () => void;
}

const holdKey = (m: DurableMessage): string => `${m.about.project}/${m.about.kind}/${m.about.name}`;

/**
 * The line. Guarantees:
 * - Events are first sent in the order they were added; an instance's next event is not sent
 *   while its previous one is unacknowledged, so the stream holds each instance's events in its
 *   sequence's order, whatever is retried.
 * - An event's instance sequence and message id are fixed when it is first sent and kept through
 *   every retry; an event dropped while waiting never got a sequence, so dropping leaves no gap.
 * - An event leaves ({@link release}) only once acknowledged, and in the order it was first sent.
 */
export class PublishLine {
  private readonly waiting = new RingQueue<DurableMessage>();
  private readonly waitingKeys = new Map<string, number>();
  private readonly lastWords = new Map<string, DurableMessage>();
  private readonly flights = new RingQueue<Flight>();
  /** Instance keys with an event sent and not yet acknowledged. */
  private readonly busy = new Set<string>();
  private readonly seqs: Map<string, number>;
  private failed = 0;
  private unackedCount = 0;
  private retryDue = false;
  private highestAcked = 0;
  /** Whether the connection is up: nothing is sent otherwise. */
  connected = false;

  constructor(private readonly options: PublishLineOptions) {
    this.seqs = options.seqs ?? new Map();
    this.highestAcked = options.streamSeq ?? 0;
  }

  /** Events not yet acknowledged: waiting, last words and sent. */
  get held(): number {
    return this.waiting.length + this.lastWords.size + this.unacked;
  }

  /** Events sent and not yet acknowledged. */
  get unacked(): number {
    return this.unackedCount;
  }

  /** Whether any sent event waits to be sent again. */
  get retrying(): boolean {
    return this.failed > 0;
  }

  /** An instance's last sequence given (or recovered). */
  lastSeq(key: string): number | undefined {
    return this.seqs.get(key);
  }

  /** Adds an event at the back. Past `maxHeld` the oldest waiting one makes room (kept as its object's last word if none later is held). */
  add(message: DurableMessage): void {
    const key = holdKey(message);
    if (this.lastWords.delete(key)) this.options.onDropped?.();
    if (this.waiting.length >= this.options.maxHeld) {
      const out = this.shiftWaiting();
      const outKey = holdKey(out);
      if (this.waitingKeys.has(outKey) || outKey === key) this.options.onDropped?.();
      else this.lastWords.set(outKey, out);
    }
    this.waiting.push(message);
    this.waitingKeys.set(key, (this.waitingKeys.get(key) ?? 0) + 1);
  }

  /** The retry pause is over: the events waiting to be sent again go at the next {@link take}. */
  retry(): void {
    this.retryDue = true;
  }

  /**
   * What to send now, in order, each with a new attempt: first every event to be sent again (once
   * the retry pause is over; nothing new goes before them), then waiting events while the window
   * has room and the head's instance has nothing unacknowledged.
   */
  take(): Flight[] {
    const out: Flight[] = [];
    if (!this.connected) return out;
    if (this.failed > 0) {
      if (!this.retryDue) return out;
      this.retryDue = false;
      for (let i = 0; i < this.flights.length; i++) {
        const flight = this.flightAt(i);
        if (flight.state !== 'failed') continue;
        flight.state = 'sending';
        flight.attempt++;
        this.failed--;
        out.push(flight);
      }
    }
    while (this.flights.length < this.options.maxPending) {
      const next = this.peekNext();
      if (next === undefined) break;
      const key = next.about.kind === 'instance' ? instanceKey(next.about.project, next.about.name) : undefined;
      if (key !== undefined && this.busy.has(key)) break;
      this.popNext();
      const flight = this.firstSend(next, key);
      this.flights.push(flight);
      out.push(flight);
    }
    return out;
  }

  /**
   * An acknowledgement for `attempt` of `flight`: `acked`, or `verify` for a duplicate (the caller
   * checks the stream holds it and says {@link verified}), or `stale` for an older attempt's.
   */
  ack(flight: Flight, attempt: number, streamSeq: number, duplicate: boolean): 'acked' | 'verify' | 'stale' {
    if (attempt !== flight.attempt || flight.state !== 'sending') return 'stale';
    flight.streamSeq = streamSeq;
    if (duplicate) {
      flight.state = 'verifying';
      return 'verify';
    }
    this.acked(flight, streamSeq);
    return 'acked';
  }

  /** A duplicate's check: `stored`, it is in the stream; otherwise it is sent again under a new message id. */
  verified(flight: Flight, stored: boolean): void {
    if (flight.state !== 'verifying') return;
    if (stored) {
      this.acked(flight, flight.streamSeq as number);
      return;
    }
    flight.republish++;
    flight.id = messageId(flight.message.about, flight.seq, flight.republish);
    this.markFailed(flight);
  }

  /** `attempt` of `flight` got no acknowledgement (a timeout, an error): it is sent again after the pause. False for an older attempt. */
  fail(flight: Flight, attempt: number): boolean {
    if (attempt !== flight.attempt || (flight.state !== 'sending' && flight.state !== 'verifying')) return false;
    this.markFailed(flight);
    return true;
  }

  /** The stream refused `flight` for good (too large): it leaves unstored. */
  refuse(flight: Flight, attempt: number): boolean {
    if (attempt !== flight.attempt || flight.state !== 'sending') return false;
    flight.state = 'refused';
    this.unackedCount--;
    if (flight.key !== undefined) this.busy.delete(flight.key);
    return true;
  }

  /** The connection went down: every answer still awaited is lost, so each of those events is sent again. */
  disconnected(): void {
    this.connected = false;
    for (let i = 0; i < this.flights.length; i++) {
      const flight = this.flightAt(i);
      if (flight.state === 'sending' || flight.state === 'verifying') {
        flight.attempt++;
        this.markFailed(flight);
      }
    }
    // Nothing to wait for: the reconnect is the pause.
    this.retryDue = true;
  }

  /** The events acknowledged (or refused) at the front, in the order first sent: they leave. */
  release(): Flight[] {
    const out: Flight[] = [];
    while (this.flights.length > 0) {
      const head = this.flightAt(0);
      if (head.state !== 'acked' && head.state !== 'refused') break;
      out.push(this.flights.shift() as Flight);
    }
    return out;
  }

  /**
   * Below this stream sequence every event the line has sent and not released is absent: the
   * lowest floor of what is unreleased (Infinity when nothing is).
   */
  floor(): number {
    return this.flights.length === 0 ? Infinity : this.flightAt(0).floor;
  }

  /**
   * Drops everything not acknowledged (a stop past its wait, a standby that lost its election):
   * how many, and how many acknowledged ones were still waiting behind an unacknowledged one (in
   * the stream, but not yet released).
   */
  abandon(): { dropped: number; acknowledged: number } {
    const dropped = this.waiting.length + this.lastWords.size + this.unackedCount;
    const acknowledged = this.flights.length - this.unackedCount;
    this.unackedCount = 0;
    while (this.waiting.length > 0) this.shiftWaiting();
    while (this.flights.length > 0) this.flights.shift();
    this.lastWords.clear();
    this.busy.clear();
    this.failed = 0;
    return { dropped, acknowledged };
  }

  private markFailed(flight: Flight): void {
    flight.state = 'failed';
    this.failed++;
  }

  private acked(flight: Flight, streamSeq: number): void {
    flight.state = 'acked';
    this.unackedCount--;
    this.highestAcked = Math.max(this.highestAcked, streamSeq);
    if (flight.key !== undefined) this.busy.delete(flight.key);
  }

  private flightAt(index: number): Flight {
    return this.flights.at(index) as Flight;
  }

  private firstSend(message: DurableMessage, key: string | undefined): Flight {
    this.unackedCount++;
    let seq: number | undefined;
    let oldSeq: number | undefined;
    if (key !== undefined) {
      seq = (this.seqs.get(key) ?? 0) + 1;
      this.seqs.set(key, seq);
      this.busy.add(key);
      if (message.oldName !== undefined) oldSeq = this.seqs.get(instanceKey(message.about.project, message.oldName));
    }
    return {
      message,
      seq,
      oldSeq,
      key,
      data: seq === undefined ? message.json : withInstanceSeq(message.json, seq),
      id: messageId(message.about, seq),
      floor: this.highestAcked,
      attempt: 1,
      state: 'sending',
      republish: 0,
    };
  }

  // Last words are older than anything waiting: they go first.
  private peekNext(): DurableMessage | undefined {
    for (const message of this.lastWords.values()) return message;
    return this.waiting.peek();
  }

  private popNext(): void {
    for (const key of this.lastWords.keys()) {
      this.lastWords.delete(key);
      return;
    }
    this.shiftWaiting();
  }

  private shiftWaiting(): DurableMessage {
    const message = this.waiting.shift() as DurableMessage;
    const key = holdKey(message);
    const count = (this.waitingKeys.get(key) ?? 1) - 1;
    if (count === 0) this.waitingKeys.delete(key);
    else this.waitingKeys.set(key, count);
    return message;
  }
}
