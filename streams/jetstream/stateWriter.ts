import type { NatsConnection } from '@nats-io/transport-node';
import { Logger, silentLogger } from '../../lib/logger';
import { RateLimitedLog } from '../../lib/rateLimitedLog';
import { Flight } from '../../lib/enricher/jetstream/publishLine';
import { AckedEvent, StateLedger, StateWrite } from '../../lib/enricher/jetstream/stateLedger';
import { writeState, writeWatermark } from './stateBucket';

/** What the writer tells whoever counts. */
export interface StateWriterHooks {
  onWrite?(op: 'put' | 'delete', ok: boolean): void;
  onPending?(pending: number): void;
  onWatermark?(streamSeq: number): void;
  /** Everything handed in is written and the watermark says so. */
  onSettled?(): void;
}

/** Options for {@link StateWriter}. */
export interface StateWriterOptions {
  nc: NatsConnection;
  bucket: string;
  stream: string;
  ledger: StateLedger;
  /** The publish line's floor: nothing unacknowledged lies below it. */
  floor: () => number;
  timeoutMs: number;
  logger?: Logger;
  hooks?: StateWriterHooks;
  /** The least time between two watermark writes. Default 100 ms. */
  watermarkEveryMs?: number;
}

/** The acknowledged event a flight became, as the ledger takes it. */
export function ackedEvent(flight: Flight): AckedEvent {
  const { about } = flight.message;
  return {
    streamSeq: flight.streamSeq as number,
    kind: about.kind,
    project: about.project,
    name: about.name,
    action: about.action,
    oldName: flight.message.oldName,
    seq: flight.seq,
    oldSeq: flight.oldSeq,
    payload: flight.data,
    record: flight.message.record,
  };
}

/**
 * Writes what the stream acknowledged into the state bucket (`StateLedger` decides what and in
 * which order): each key's record or delete marker, at most one write per key at a time, a
 * failed write retried (1 s later) before anything newer about its key, and the watermark written
 * as it grows (at most every `watermarkEveryMs`), so a consumer reading the bucket knows where to
 * start following the stream.
 */
export class StateWriter {
  private readonly logger: Logger;
  private readonly failures: RateLimitedLog;
  private up = false;
  private written = 0;
  private watermarkBusy = false;
  private watermarkTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private lastWatermarkAt = 0;
  private closing = false;
  private settledWaiter: (() => void) | undefined;
  private readonly listeners: Array<() => void> = [];

  constructor(private readonly options: StateWriterOptions) {
    this.logger = options.logger ?? silentLogger;
    this.failures = new RateLimitedLog({ logger: this.logger });
  }

  /** Calls `listener` each time everything handed in is written (the publisher's `close` waits for it). */
  onSettle(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** The connection's state: writes wait while it is down. */
  connected(up: boolean): void {
    if (this.closing && up) return;
    this.up = up;
    if (up) this.flush();
  }

  /** An acknowledged event, in release order. */
  take(flight: Flight): void {
    this.options.ledger.take(ackedEvent(flight));
  }

  /** Events a recovery found acknowledged and not written, in stream order, then the stream sequence it read to. */
  repair(events: readonly AckedEvent[], streamSeq: number): void {
    for (const event of events) this.options.ledger.take(event);
    this.options.ledger.reached(streamSeq);
    this.flush();
  }

  /** Whether everything handed in is written and the watermark is too. */
  settled(): boolean {
    return this.options.ledger.pending === 0 && !this.watermarkBusy && this.current() <= this.written;
  }

  /** Starts what can be written now. */
  flush(): void {
    if (!this.up) return;
    const { ledger, nc, bucket, timeoutMs, hooks } = this.options;
    for (const write of ledger.writable()) {
      const op = write.value === undefined ? 'delete' : 'put';
      writeState(nc, bucket, write, timeoutMs).then(
        () => {
          ledger.written(write);
          hooks?.onWrite?.(op, true);
          this.flush();
        },
        (error: unknown) => this.failedWrite(write, op, error),
      );
    }
    hooks?.onPending?.(ledger.pending);
    this.watermark();
    this.checkSettled();
  }

  /** Waits (up to `timeoutMs`) for what is pending to land. */
  async close(timeoutMs: number): Promise<void> {
    this.closing = true;
    if (!this.settled() && this.up) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => (this.settledWaiter = resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
      clearTimeout(timer);
    }
    clearTimeout(this.watermarkTimer);
    clearTimeout(this.retryTimer);
    this.failures.close();
    if (this.options.ledger.pending > 0)
      this.logger.warn({ pending: this.options.ledger.pending }, 'stopping with state bucket writes not landed');
  }

  /** Writes nothing more (a standby that lost the election: the next leader writes from what the stream holds). */
  abandon(): void {
    this.closing = true;
    this.up = false;
    clearTimeout(this.watermarkTimer);
    clearTimeout(this.retryTimer);
    this.failures.close();
  }

  private current(): number {
    return this.options.ledger.watermark(this.options.floor());
  }

  private failedWrite(write: StateWrite, op: 'put' | 'delete', error: unknown): void {
    this.options.ledger.failed(write);
    this.options.hooks?.onWrite?.(op, false);
    this.failures.log('failed', { err: error, key: write.key }, 'a state bucket write failed: trying again');
    if (this.retryTimer === undefined && !this.closing)
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.flush();
      }, 1000);
  }

  private watermark(): void {
    if (!this.up || this.watermarkBusy || this.watermarkTimer !== undefined) return;
    const mark = this.current();
    if (mark <= this.written) return;
    const wait = this.lastWatermarkAt + (this.options.watermarkEveryMs ?? 100) - Date.now();
    if (wait > 0 && !this.closing) {
      this.watermarkTimer = setTimeout(() => {
        this.watermarkTimer = undefined;
        this.watermark();
      }, wait);
      return;
    }
    this.watermarkBusy = true;
    this.lastWatermarkAt = Date.now();
    const { nc, bucket, stream, timeoutMs, hooks } = this.options;
    writeWatermark(nc, bucket, stream, mark, timeoutMs).then(
      () => {
        this.watermarkBusy = false;
        this.written = Math.max(this.written, mark);
        hooks?.onWatermark?.(this.written);
        this.watermark();
        this.checkSettled();
      },
      (error: unknown) => {
        this.watermarkBusy = false;
        this.failures.log('watermark', { err: error }, 'writing the state bucket watermark failed: trying again');
        this.watermarkTimer = setTimeout(() => {
          this.watermarkTimer = undefined;
          this.watermark();
        }, 1000);
      },
    );
  }

  private checkSettled(): void {
    if (!this.settled()) return;
    this.options.hooks?.onSettled?.();
    for (const listener of this.listeners) listener();
    this.settledWaiter?.();
    this.settledWaiter = undefined;
  }
}
