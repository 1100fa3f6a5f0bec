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
    const gauge = (name: string, help: string): Gauge => once(name, () => new Gauge({ name, help, registers }));
    const counter = <L extends string = string>(name: string, help: string, labelNames: L[] = []): Counter<L> =>
      once(name, () => new Counter({ name, help, labelNames, registers }));
    this.projects = gauge('enricher_projects', 'Projects held in the model');
    this.instances = gauge('enricher_instances', 'Instances held in the model');
    this.networks = gauge('enricher_networks', 'Networks held in the model');
    this.sweeps = counter('enricher_sweeps_total', 'Rounds over the fleet that ended, by result', ['result']);
    this.reads = counter('enricher_reads_total', 'REST calls to the Incus server, by kind and result', ['kind', 'result']);
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
    this.eventsReceived = counter('enricher_events_received_total', 'Lifecycle events taken from the event stream');
    this.eventsMalformed = counter('enricher_events_malformed_total', 'Frames or events that could not be decoded');
    this.eventsDropped = counter('enricher_events_dropped_total', 'Events that went nowhere, by reason', ['reason']);
    this.eventsEmitted = counter('enricher_events_emitted_total', 'Events handed on, by status', ['status']);
    this.repairsPending = gauge('enricher_repairs_pending', 'Instances with a repair read scheduled');
    this.awaitingAddress = gauge('enricher_instances_awaiting_address', 'Instances last read running with a NIC and no address');
    this.lineLength = gauge('enricher_line_length', 'Events waiting in the ordered line');
    this.connected = gauge('enricher_connected', '1 while the Incus event stream is connected');
    this.warm = gauge('enricher_warm', '1 once the model can place instances on networks');
    this.storeWrites = counter('enricher_store_writes_total', 'Cold store writes, by result', ['result']);
    this.storeStale = gauge('enricher_store_stale', '1 from a failed cold store write until a write lands');
    this.storeLastSuccess = gauge(
      'enricher_store_last_success_timestamp_seconds',
      'When a cold store write last landed, Unix seconds (0 before the first)',
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
