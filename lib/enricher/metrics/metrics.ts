import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { ReadKind, ReadOutcome } from '../reads/observableReader';

/** Why an event went nowhere. */
export type DropReason = 'unwanted' | 'debounce' | 'unserved' | 'unchanged' | 'stale';

const READ_KINDS: readonly ReadKind[] = ['instance', 'instance_state', 'network', 'project', 'listing'];
const READ_OUTCOMES: readonly ReadOutcome[] = ['ok', 'not_found', 'error', 'timeout', 'aborted'];
const DROP_REASONS: readonly DropReason[] = ['unwanted', 'debounce', 'unserved', 'unchanged', 'stale'];

/**
 * The enricher's metrics, on the registry it is given (never prom-client's global one). Every
 * series exists at zero from the start, so a dashboard can tell "nothing happened" from "not
 * running". The upstream names (`enricher_projects`, `enricher_instances`,
 * `enricher_sweeps_total{result}`) are kept.
 */
export class EnricherMetrics {
  /** Projects held in the model. */
  readonly projects: Gauge;
  /** Instances held in the model. */
  readonly instances: Gauge;
  /** Networks held in the model. */
  readonly networks: Gauge;
  /** Rounds that ended, by `result` (`success`, `failed`); an abandoned round is neither. */
  readonly sweeps: Counter<'result'>;
  /** REST calls, by `kind` and `result`. */
  readonly reads: Counter<'kind' | 'result'>;
  /** How long REST calls took, by `kind`. */
  readonly readSeconds: Histogram<'kind'>;
  /** Lifecycle events taken from the stream (decoded or not). */
  readonly eventsReceived: Counter;
  /** Frames or events that could not be decoded. */
  readonly eventsMalformed: Counter;
  /** Events that went nowhere, by `reason`. */
  readonly eventsDropped: Counter<'reason'>;
  /** Events handed on, by `status` (`ok`, `failed`). */
  readonly eventsEmitted: Counter<'status'>;
  /** Keys with a repair read scheduled. */
  readonly repairsPending: Gauge;
  /** Instances last read running with a NIC and no address, read again on a backing-off schedule. */
  readonly awaitingAddress: Gauge;
  /** Events in the ordered line, waiting for a read or for what is ahead of them. */
  readonly lineLength: Gauge;
  /** 1 while the event stream is connected. */
  readonly connected: Gauge;
  /** 1 once the model can place instances on networks (first round's networks, or a cold store). */
  readonly warm: Gauge;
  /** Cold store writes, by `result` (`ok`, `failed`). */
  readonly storeWrites: Counter<'result'>;
  /** 1 from a failed cold store write until a write lands (the file on disk is behind the model). */
  readonly storeStale: Gauge;
  /** When a cold store write last landed, Unix seconds (0 before the first). */
  readonly storeLastSuccess: Gauge;
  // Label children looked up once: a read's outcome and every event's fate are counted on the hot
  // path, and `labels()` validates the labels and binds a fresh child on every call.
  private readonly readChildren = new Map<string, { count: Counter.Internal; seconds: Histogram.Internal<'kind'> }>();
  private readonly droppedChildren = new Map<string, Counter.Internal>();
  private readonly emittedChildren = new Map<string, Counter.Internal>();
  // What the model's gauges were last set to: they are refreshed after every task of the owner,
  // and a gauge's `set` allocates, while the counts rarely change.
  private modelCounts = { projects: NaN, instances: NaN, networks: NaN };

  constructor(registry: Registry) {
    const registers = [registry];
    // A standby's every term builds an enricher on the daemon's one registry: the series are
    // registered once and carried from term to term.
    const once = <T>(name: string, make: () => T): T => (registry.getSingleMetric(name) as T | undefined) ?? make();
    this.projects = once(
      'enricher_projects',
      () => new Gauge({ name: 'enricher_projects', help: 'Projects held in the model', registers }),
    );
    this.instances = once(
      'enricher_instances',
      () => new Gauge({ name: 'enricher_instances', help: 'Instances held in the model', registers }),
    );
    this.networks = once(
      'enricher_networks',
      () => new Gauge({ name: 'enricher_networks', help: 'Networks held in the model', registers }),
    );
    this.sweeps = once(
      'enricher_sweeps_total',
      () =>
        new Counter({
          name: 'enricher_sweeps_total',
          help: 'Rounds over the fleet that ended, by result',
          labelNames: ['result'],
          registers,
        }),
    );
    this.reads = once(
      'enricher_reads_total',
      () =>
        new Counter({
          name: 'enricher_reads_total',
          help: 'REST calls to the Incus server, by kind and result',
          labelNames: ['kind', 'result'],
          registers,
        }),
    );
    this.readSeconds = once(
      'enricher_read_duration_seconds',
      () =>
        new Histogram({
          name: 'enricher_read_duration_seconds',
          help: 'Duration of REST calls to the Incus server, by kind',
          labelNames: ['kind'],
          buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
          registers,
        }),
    );
    this.eventsReceived = once(
      'enricher_events_received_total',
      () =>
        new Counter({
          name: 'enricher_events_received_total',
          help: 'Lifecycle events taken from the event stream',
          registers,
        }),
    );
    this.eventsMalformed = once(
      'enricher_events_malformed_total',
      () =>
        new Counter({
          name: 'enricher_events_malformed_total',
          help: 'Frames or events that could not be decoded',
          registers,
        }),
    );
    this.eventsDropped = once(
      'enricher_events_dropped_total',
      () =>
        new Counter({
          name: 'enricher_events_dropped_total',
          help: 'Events that went nowhere, by reason',
          labelNames: ['reason'],
          registers,
        }),
    );
    this.eventsEmitted = once(
      'enricher_events_emitted_total',
      () =>
        new Counter({
          name: 'enricher_events_emitted_total',
          help: 'Events handed on, by status',
          labelNames: ['status'],
          registers,
        }),
    );
    this.repairsPending = once(
      'enricher_repairs_pending',
      () => new Gauge({ name: 'enricher_repairs_pending', help: 'Instances with a repair read scheduled', registers }),
    );
    this.awaitingAddress = once(
      'enricher_instances_awaiting_address',
      () =>
        new Gauge({
          name: 'enricher_instances_awaiting_address',
          help: 'Instances last read running with a NIC and no address',
          registers,
        }),
    );
    this.lineLength = once(
      'enricher_line_length',
      () => new Gauge({ name: 'enricher_line_length', help: 'Events waiting in the ordered line', registers }),
    );
    this.connected = once(
      'enricher_connected',
      () => new Gauge({ name: 'enricher_connected', help: '1 while the Incus event stream is connected', registers }),
    );
    this.warm = once(
      'enricher_warm',
      () => new Gauge({ name: 'enricher_warm', help: '1 once the model can place instances on networks', registers }),
    );
    this.storeWrites = once(
      'enricher_store_writes_total',
      () =>
        new Counter({
          name: 'enricher_store_writes_total',
          help: 'Cold store writes, by result',
          labelNames: ['result'],
          registers,
        }),
    );
    this.storeStale = once(
      'enricher_store_stale',
      () => new Gauge({ name: 'enricher_store_stale', help: '1 from a failed cold store write until a write lands', registers }),
    );
    this.storeLastSuccess = once(
      'enricher_store_last_success_timestamp_seconds',
      () =>
        new Gauge({
          name: 'enricher_store_last_success_timestamp_seconds',
          help: 'When a cold store write last landed, Unix seconds (0 before the first)',
          registers,
        }),
    );

    for (const result of ['success', 'failed']) this.sweeps.labels(result).inc(0);
    for (const kind of READ_KINDS) {
      const seconds = this.readSeconds.labels(kind);
      for (const result of READ_OUTCOMES) {
        const count = this.reads.labels(kind, result);
        count.inc(0);
        this.readChildren.set(`${kind}/${result}`, { count, seconds });
      }
    }
    for (const reason of DROP_REASONS) {
      const child = this.eventsDropped.labels(reason);
      child.inc(0);
      this.droppedChildren.set(reason, child);
    }
    for (const status of ['ok', 'failed']) {
      const child = this.eventsEmitted.labels(status);
      child.inc(0);
      this.emittedChildren.set(status, child);
    }
    for (const result of ['ok', 'failed']) this.storeWrites.labels(result).inc(0);
    // A term starts disconnected, cold, with an empty line, whatever the last one left.
    for (const gauge of [this.connected, this.warm, this.lineLength, this.awaitingAddress, this.repairsPending]) gauge.set(0);
  }

  /** Counts one REST call. */
  read(kind: ReadKind, outcome: ReadOutcome, ms: number): void {
    const child = this.readChildren.get(`${kind}/${outcome}`);
    if (child === undefined) return;
    child.count.inc();
    if (outcome !== 'aborted') child.seconds.observe(ms / 1000);
  }

  /** Counts one event that went nowhere, by `reason` (as `eventsDropped.labels(reason).inc()`). */
  dropped(reason: DropReason): void {
    (this.droppedChildren.get(reason) ?? this.eventsDropped.labels(reason)).inc();
  }

  /** Counts one event handed on, by `status` (as `eventsEmitted.labels(status).inc()`). */
  emitted(status: string): void {
    (this.emittedChildren.get(status) ?? this.eventsEmitted.labels(status)).inc();
  }

  /** Sets the model's gauges (projects, instances, networks); a gauge whose count did not change is left alone. */
  setModelCounts(projects: number, instances: number, networks: number): void {
    const last = this.modelCounts;
    if (projects === last.projects && instances === last.instances && networks === last.networks) return;
    if (projects !== last.projects) this.projects.set(projects);
    if (instances !== last.instances) this.instances.set(instances);
    if (networks !== last.networks) this.networks.set(networks);
    this.modelCounts = { projects, instances, networks };
  }
}
