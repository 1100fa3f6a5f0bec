import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Why a publish is sent again. */
export type RetryReason = 'timeout' | 'error' | 'disconnected' | 'not_stored';

/**
 * The durable outputs' metrics (`outputs.jetstream`, `outputs.state`, `standby`), on the daemon's
 * registry beside `enricher_published_total{output="jetstream"}`. Every series exists at zero from
 * the start.
 */
export class DurableMetrics {
  /** Events not yet acknowledged by the stream: waiting, and sent. */
  readonly held: Gauge;
  /** Events sent and awaiting their acknowledgement. */
  readonly unacked: Gauge;
  /** 1 while the JetStream output's connection is up. */
  readonly connected: Gauge;
  /** From an event's first send to its acknowledgement. */
  readonly ackSeconds: Histogram;
  /** Publishes sent again, by why. */
  readonly retries: Counter<'reason'>;
  /** Acknowledgements saying duplicate, by what the stream was found to hold: `stored`, `not_stored` (sent again under a new id). */
  readonly duplicates: Counter<'result'>;
  /** State bucket writes, by `op` (`put`, `delete`) and `result` (`ok`, `failed`). */
  readonly stateWrites: Counter<'op' | 'result'>;
  /** State bucket writes not yet landed. */
  readonly statePending: Gauge;
  /** The stream sequence the state bucket is complete to. */
  readonly stateWatermark: Gauge;
  /** 1 while this instance enriches (always, without `standby`), 0 while it stands by. */
  readonly active: Gauge;
  /** Times this instance took over (won the election and started enriching). */
  readonly takeovers: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.held = new Gauge({ name: 'enricher_jetstream_held', help: 'Enriched events not yet acknowledged by the stream', registers });
    this.unacked = new Gauge({
      name: 'enricher_jetstream_unacked',
      help: 'Enriched events sent and awaiting their acknowledgement',
      registers,
    });
    this.connected = new Gauge({
      name: 'enricher_jetstream_connected',
      help: "1 while the JetStream output's connection is up",
      registers,
    });
    this.ackSeconds = new Histogram({
      name: 'enricher_jetstream_ack_seconds',
      help: "From an event's first send to the stream's acknowledgement",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.retries = new Counter({
      name: 'enricher_jetstream_retries_total',
      help: 'Publishes sent again, by reason (timeout, error, disconnected, not_stored)',
      labelNames: ['reason'],
      registers,
    });
    this.duplicates = new Counter({
      name: 'enricher_jetstream_duplicates_total',
      help: 'Acknowledgements marked duplicate, by what the stream held (stored, not_stored)',
      labelNames: ['result'],
      registers,
    });
    this.stateWrites = new Counter({
      name: 'enricher_state_writes_total',
      help: 'State bucket writes, by op (put, delete) and result (ok, failed)',
      labelNames: ['op', 'result'],
      registers,
    });
    this.statePending = new Gauge({ name: 'enricher_state_pending', help: 'State bucket writes not yet landed', registers });
    this.stateWatermark = new Gauge({
      name: 'enricher_state_watermark',
      help: 'The stream sequence the state bucket holds every instance event up to',
      registers,
    });
    this.active = new Gauge({ name: 'enricher_active', help: '1 while this instance enriches, 0 while it stands by', registers });
    this.takeovers = new Counter({ name: 'enricher_takeovers_total', help: 'Times this standby took over', registers });
    for (const reason of ['timeout', 'error', 'disconnected', 'not_stored']) this.retries.labels(reason).inc(0);
    for (const result of ['stored', 'not_stored']) this.duplicates.labels(result).inc(0);
    for (const op of ['put', 'delete']) for (const result of ['ok', 'failed']) this.stateWrites.labels(op, result).inc(0);
  }
}
