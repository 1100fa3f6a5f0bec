import { Counter, Gauge, Registry } from 'prom-client';

/** Where the daemon sends events. */
export type Output = 'nats' | 'jetstream' | 'stdout';

/**
 * What `rxfleet enrich` itself adds to the enricher's and the Incus client's metrics, on the same
 * registry. Every series exists at zero from the start.
 */
export class EnrichDaemonMetrics {
  /**
   * Events by output and `result`: `sent` (handed to the NATS connection, acknowledged by the
   * JetStream stream, or written as a line), `dropped` (held while NATS was unreachable and pushed
   * out, or still held at shutdown), `failed` (refused by the client or the stream, or the line
   * could not be written).
   */
  readonly published: Counter<'output' | 'result'>;
  /** Events held while NATS is unreachable. */
  readonly natsHeld: Gauge;
  /** 1 while the NATS connection is up. */
  readonly natsConnected: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.published = new Counter({
      name: 'enricher_published_total',
      help: 'Enriched events by output (nats, jetstream, stdout) and result (sent, dropped, failed)',
      labelNames: ['output', 'result'],
      registers,
    });
    this.natsHeld = new Gauge({ name: 'enricher_nats_held', help: 'Enriched events held while NATS is unreachable', registers });
    this.natsConnected = new Gauge({ name: 'enricher_nats_connected', help: '1 while the NATS connection is up', registers });
    for (const output of ['nats', 'jetstream', 'stdout'])
      for (const result of ['sent', 'dropped', 'failed']) this.published.labels(output, result).inc(0);
  }
}
