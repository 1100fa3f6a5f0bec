/**
 * The JetStream output and the state bucket (`outputs.jetstream`, `outputs.state`), wired: one
 * connection, the stream and the bucket checked (or created) before anything is published, and,
 * for each term of enriching (the whole run, or each time a standby leads), what consumers were
 * last told read back first, so sequences continue and the first round says only what changed.
 */
import { EnrichDaemonMetrics } from '../../lib/enricher/metrics/daemonMetrics';
import { DurableMetrics } from '../../lib/enricher/metrics/durableMetrics';
import { JetStreamOutputSettings, StateOutputSettings } from '../../lib/enricher/config/config';
import { EnrichedEvent } from '../../lib/enricher/model/event';
import { eventFromPayload } from '../../lib/enricher/output/eventFromPayload';
import { subjectFor } from '../../lib/enricher/output/subject';
import { PublishLine } from '../../lib/enricher/jetstream/publishLine';
import { StateLedger } from '../../lib/enricher/jetstream/stateLedger';
import { Logger } from '../../lib/logger';
import { CredentialWatch } from '../../streams/credentialWatch';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { PublisherState } from '../../streams/natsPublisher';
import { SetupReport, ensureEventStream, ensureStateBucket } from '../../streams/jetstream/eventStream';
import { JetStreamPublisher } from '../../streams/jetstream/jetstreamPublisher';
import { recoverFleet, recoverSequences } from '../../streams/jetstream/recoverFleet';
import { StateSnapshot } from '../../streams/jetstream/stateBucket';
import { StateWriter } from '../../streams/jetstream/stateWriter';
import { retryingTransient } from '../../streams/jetstream/transient';
import { errorMessage } from '../../lib/choria/errors';

/** What {@link DurableOutput} needs. */
export interface DurableParts {
  logger: Logger;
  metrics: DurableMetrics;
  published: EnrichDaemonMetrics;
  watch: CredentialWatch;
  /** Told each acknowledgement's latency, seconds, besides the histogram. */
  onAck?: ((seconds: number) => void) | undefined;
}

/** The durable output: open once, then a term at a time. */
export class DurableOutput {
  private connection: FleetConnection | undefined;
  private publisher: JetStreamPublisher | undefined;
  private setUp = false;
  /** What the start-up check found, for the log and `/health`. */
  stream: SetupReport | undefined;
  bucket: SetupReport | undefined;

  constructor(
    readonly settings: JetStreamOutputSettings,
    readonly state: StateOutputSettings | undefined,
    private readonly parts: DurableParts,
  ) {}

  /** Its series: `enricher_active` and `enricher_takeovers_total` follow the terms (`beginTerms.ts`). */
  get metrics(): DurableMetrics {
    return this.parts.metrics;
  }

  /** The connection (once open): the standby's election runs on it too. */
  get nc(): FleetConnection {
    if (this.connection === undefined) throw new Error('the JetStream output is not open');
    return this.connection;
  }

  /**
   * Connects (waiting for NATS as long as it takes, unless `signal` aborts), then checks the
   * stream and the bucket, creating them when told to. Rejects with `DurableSetupError` when one
   * is missing and not to be created: the daemon cannot start.
   */
  async open(signal: AbortSignal): Promise<void> {
    const { servers, name, user, password, token, credentials, tls } = this.settings;
    const { logger, metrics, watch } = this.parts;
    this.connection = await openNatsConnection({ servers, name, user, password, token, credentials, tls, signal, watch }, logger);
    this.connection.state$.subscribe((state) => metrics.connected.set(state === 'connected' ? 1 : 0));
    this.stream = await ensureEventStream(this.connection.nc, this.settings);
    if (this.state !== undefined) this.bucket = await ensureStateBucket(this.connection.nc, this.state);
    for (const report of [this.stream, this.bucket]) {
      if (report === undefined) continue;
      for (const warning of report.warnings) logger.warn({ name: report.name }, warning);
      logger.info(
        { name: report.name, created: report.created, replicas: report.replicas, maxAgeMs: report.maxAge, maxBytes: report.maxBytes },
        report.created ? `created ${report.name}` : `using ${report.name}`,
      );
    }
    this.setUp = true;
  }

  /** Whether the stream (and bucket) are checked. */
  get ready(): boolean {
    return this.setUp;
  }

  /**
   * Starts a term: reads back what consumers were told (`snapshot`: the bucket as a standby's
   * follower holds it; default read now), writes into the bucket what the stream has and the
   * bucket lacks, and opens the publisher with every instance's sequence. Resolves with the events
   * to seed the enricher with (`undefined` without a state bucket: the cold store alone).
   */
  async begin(snapshot?: StateSnapshot): Promise<EnrichedEvent[] | undefined> {
    const { logger, metrics, published } = this.parts;
    const nc = this.nc.nc;
    const { stream, subjectPrefix, maxHeld, maxPending, ackTimeout } = this.settings;
    const onDropped = (): void => published.published.labels('jetstream', 'dropped').inc();
    const retrying = (error: unknown, attempt: number): void =>
      logger.warn({ err: error, attempt }, `reading back what consumers were told failed: ${errorMessage(error)}; trying again`);
    let told: EnrichedEvent[] | undefined;
    let line: PublishLine;
    let writer: StateWriter | undefined;
    if (this.state !== undefined) {
      const bucket = this.state.bucket;
      const recovered = await retryingTransient(
        () => recoverFleet({ nc, stream, subjectPrefix, bucket, ...(snapshot !== undefined ? { snapshot } : {}) }),
        retrying,
      );
      told = recovered.instances.map((i) => eventFromPayload(i.event));
      line = new PublishLine({ maxHeld, maxPending, seqs: recovered.seqs, streamSeq: recovered.streamSeq, onDropped });
      writer = new StateWriter({
        nc,
        bucket,
        stream,
        ledger: new StateLedger(recovered.watermark, recovered.records),
        floor: () => line.floor(),
        timeoutMs: ackTimeout,
        logger,
        hooks: {
          onWrite: (op, ok) => metrics.stateWrites.labels(op, ok ? 'ok' : 'failed').inc(),
          onPending: (pending) => metrics.statePending.set(pending),
          onWatermark: (seq) => metrics.stateWatermark.set(seq),
        },
      });
      writer.repair(recovered.repairs, recovered.streamSeq);
      logger.info(
        {
          instances: recovered.instances.length,
          sequences: recovered.seqs.size,
          streamSeq: recovered.streamSeq,
          bucketWatermark: recovered.watermark,
          repaired: recovered.repairs.length,
          malformed: recovered.malformed,
        },
        'read back what consumers were told: the stream and the state bucket',
      );
    } else {
      const recovered = await retryingTransient(() => recoverSequences(nc, stream, subjectPrefix), retrying);
      line = new PublishLine({ maxHeld, maxPending, seqs: recovered.seqs, streamSeq: recovered.streamSeq, onDropped });
      logger.info(
        { sequences: recovered.seqs.size, streamSeq: recovered.streamSeq },
        "read back every instance's sequence from the stream",
      );
    }
    this.publisher = new JetStreamPublisher({
      connection: this.nc,
      stream,
      line,
      ...(writer !== undefined ? { state: writer } : {}),
      ackTimeoutMs: ackTimeout,
      logger,
      hooks: {
        onResult: (result) => published.published.labels('jetstream', result).inc(),
        onHeld: (held, unacked) => {
          metrics.held.set(held);
          metrics.unacked.set(unacked);
        },
        onAck: (seconds) => {
          metrics.ackSeconds.observe(seconds);
          this.parts.onAck?.(seconds);
        },
        onRetry: (reason) => metrics.retries.labels(reason).inc(),
        onDuplicate: (stored) => metrics.duplicates.labels(stored ? 'stored' : 'not_stored').inc(),
      },
    });
    return told;
  }

  /** Hands one event to the term's publisher; outside a term (a standby, a stop), it is dropped and counted. */
  publish(event: EnrichedEvent, json: string): void {
    if (this.publisher === undefined) {
      this.parts.published.published.labels('jetstream', 'dropped').inc();
      return;
    }
    this.publisher.publish({
      subject: subjectFor(this.settings.subjectPrefix, event),
      json,
      about: {
        kind: event.kind,
        project: event.project,
        name: event.name,
        action: event.action,
        stamp: event.timestamp ?? new Date(event.received).toISOString(),
      },
      ...(event.oldName !== undefined ? { oldName: event.oldName } : {}),
      record: event.instance !== undefined,
    });
  }

  /** Ends the term: `drain` waits (5 s at most) for what is held to be acknowledged and written; `abandon` drops it at once. */
  async end(mode: 'drain' | 'abandon'): Promise<void> {
    const publisher = this.publisher;
    this.publisher = undefined;
    if (publisher === undefined) return;
    if (mode === 'drain') await publisher.close();
    else {
      const dropped = publisher.abandon();
      if (dropped > 0) this.parts.logger.warn({ dropped }, 'the term ended with events the stream had not acknowledged: dropped');
    }
  }

  /** The connection's state (`connecting` until it first connects). */
  status(): PublisherState {
    return this.connection?.state ?? 'connecting';
  }

  /** Events held for the stream. */
  held(): number {
    return this.publisher?.held ?? 0;
  }

  /** Ends the term (drained) and drains the connection. */
  async close(): Promise<void> {
    await this.end('drain');
    await this.connection?.drain();
  }
}
