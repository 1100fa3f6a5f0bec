import { Counter, Gauge, Registry, Summary } from 'prom-client';
import { RefusalReason } from '@rxfleet/operators';
import { INCUS_EVENT_RESULTS, IncusEventResult } from '../sightings/incusSightings';

/** Every `rpc` label value upstream uses, in the order of the provisioning cycle. */
export const PROVISIONER_RPCS = [
  'choria_provision#jwt',
  'choria_provision#gen25519',
  'rpcutil#inventory',
  'choria_provision#gencsr',
  'choria_provision#release_update',
  'choria_provision#configure',
  'choria_provision#restart',
  'choria_provision#shutdown',
] as const;

/** One of {@link PROVISIONER_RPCS}. */
export type ProvisionerRpc = (typeof PROVISIONER_RPCS)[number];

/** Why a sighting was not admitted: the admission ledger's reasons (DECISIONS P3), and a failing node's backoff (P22). */
export const ADMISSION_REFUSAL_REASONS: readonly AdmissionRefusalReason[] = ['held', 'full', 'backoff'];

/** One of {@link ADMISSION_REFUSAL_REASONS}. */
export type AdmissionRefusalReason = RefusalReason | 'backoff';

/** What became of a provisioning record (DECISIONS P21): written, refused by the stream, or dropped unsent. */
export const RECORD_RESULTS = ['written', 'failed', 'dropped'] as const;

/** One of {@link RECORD_RESULTS}. */
export type RecordResult = (typeof RECORD_RESULTS)[number];

/** Where a sighting came from, as the re-admission counter labels it. */
export const SIGHTING_SOURCES = ['discovery', 'event', 'incus'] as const;

/** Where malformed input came from (`incus_event`: a message on the Incus feed's subjects). */
export const MALFORMED_INPUT_SOURCES = ['lifecycle_event', 'discovery_reply', 'rpc_reply', 'incus_event'] as const;

/** One of {@link MALFORMED_INPUT_SOURCES}. */
export type MalformedInputSource = (typeof MALFORMED_INPUT_SOURCES)[number];

/**
 * Why a well-formed reply was not anybody's answer: `unsolicited` (no request waits for its id:
 * late, after a timeout or an outage) or `stranger` (another node than the one asked, P18).
 */
export const UNEXPECTED_REPLY_REASONS = ['unsolicited', 'stranger'] as const;

/** One of {@link UNEXPECTED_REPLY_REASONS}. */
export type UnexpectedReplyReason = (typeof UNEXPECTED_REPLY_REASONS)[number];

/** Options for {@link ProvisionerMetrics}. */
export interface ProvisionerMetricsOptions {
  /** The daemon's registry (never prom-client's global one). */
  registry: Registry;
  /** The `site` label on every series (the config's `site`, possibly empty). */
  site?: string;
}

/**
 * The provisioner's Prometheus metrics: upstream's names, types, help and labels (reference §5),
 * plus counters for what rxfleet adds (DECISIONS P3, P10, bad input). The `site` label is bound
 * once, so callers name the event, not the label.
 *
 * Guarantees:
 * - every series exists at zero before the first node (DECISIONS P2), including `rpc_time` and
 *   `rpc_errors` for each label in {@link PROVISIONER_RPCS} and the refusal and malformed-input
 *   counters for each reason and source;
 * - summaries have no quantiles: only `_sum` and `_count`, as upstream's;
 * - upstream's counters keep upstream's names without `_total` (dashboards query them); the
 *   counters rxfleet adds end in `_total`, as Prometheus naming asks.
 */
export class ProvisionerMetrics {
  readonly site: string;
  private readonly labels: { site: string };

  private readonly discoveredCounter: Counter<'site'>;
  private readonly eventDiscoveredCounter: Counter<'site'>;
  private readonly discoverCyclesCounter: Counter<'site'>;
  private readonly discoveryErrorsCounter: Counter<'site'>;
  private readonly provisionErrorsCounter: Counter<'site'>;
  private readonly busyWorkersGauge: Gauge<'site'>;
  private readonly provisionedCounter: Counter<'site'>;
  private readonly workQueueEntriesGauge: Gauge<'site'>;
  private readonly waitingNodesGauge: Gauge<'site'>;
  private readonly pausedGauge: Gauge<'site'>;
  private readonly rpcTimeSummary: Summary<'site' | 'rpc'>;
  private readonly rpcErrorsCounter: Counter<'site' | 'rpc'>;
  private readonly helperTimeSummary: Summary<'site'>;
  private readonly helperErrorsCounter: Counter<'site'>;
  private readonly helperShutdownRequestsCounter: Counter<'site'>;
  private readonly admissionRefusedCounter: Counter<'site' | 'reason'>;
  private readonly backoffNodesGauge: Gauge<'site'>;
  private readonly recordsCounter: Counter<'site' | 'result'>;
  private readonly lockRefusalsCounter: Counter<'site'>;
  private readonly malformedInputCounter: Counter<'site' | 'source'>;
  private readonly unexpectedRepliesCounter: Counter<'site' | 'reason'>;
  private readonly readmissionsCounter: Counter<'site' | 'via'>;
  private readonly incusDiscoveredCounter: Counter<'site'>;
  private readonly incusEventsCounter: Counter<'site' | 'result'>;

  constructor(options: ProvisionerMetricsOptions) {
    const { registry } = options;
    this.site = options.site ?? '';
    this.labels = { site: this.site };
    const registers = [registry];
    const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Counter<L>({ name, help, labelNames, registers });
    const gauge = (name: string, help: string) => new Gauge<'site'>({ name, help, labelNames: ['site'], registers });
    const summary = <L extends string>(name: string, help: string, labelNames: L[]) =>
      new Summary<L>({ name, help, labelNames, percentiles: [], registers });

    // Help texts are upstream's (host/stats.go, hosts/stats.go, config/stats.go) where known.
    this.discoveredCounter = counter('choria_provisioner_discovered', 'How many nodes were found through discovery', ['site']);
    this.eventDiscoveredCounter = counter(
      'choria_provisioner_event_discovered',
      'How many nodes were found through receiving an event about them',
      ['site'],
    );
    this.discoverCyclesCounter = counter('choria_provisioner_discover_cycles', 'How many discovery cycles were ran', ['site']);
    this.discoveryErrorsCounter = counter('choria_provisioner_discovery_errors', 'How many discovery related errors were encountered', [
      'site',
    ]);
    this.provisionErrorsCounter = counter('choria_provisioner_provision_errors', 'How many provision related errors were encountered', [
      'site',
    ]);
    this.busyWorkersGauge = gauge('choria_provisioner_busy_workers', 'How many workers are busy provisioning nodes');
    this.provisionedCounter = counter('choria_provisioner_provisioned', 'How many nodes were successfully provisioned', ['site']);
    this.workQueueEntriesGauge = gauge(
      'choria_provisioner_work_queue_entries',
      'Number of nodes on the work queue waiting to be provisioned',
    );
    // Upstream's name and meaning (its map of known hosts); its HELP said "waiting to be provisioned",
    // which a node held after its cycle is not, so the HELP says what is counted.
    this.waitingNodesGauge = gauge(
      'choria_provisioner_waiting_nodes',
      'The number of nodes the provisioner holds: queued, being provisioned, or held after a cycle until the next interval',
    );
    this.pausedGauge = gauge('choria_provisioner_paused', 'Indicates if the provisioner is paused');
    this.rpcTimeSummary = summary('choria_provisioner_rpc_time', 'How long it took to perform RPC requests', ['site', 'rpc']);
    this.rpcErrorsCounter = counter('choria_provisioner_rpc_errors', 'How many rpc related errors were encountered', ['site', 'rpc']);
    this.helperTimeSummary = summary('choria_provisioner_helper_time', 'How long it took to run the helper', ['site']);
    this.helperErrorsCounter = counter('choria_provisioner_helper_errors', 'How many helper related errors were encountered', ['site']);
    this.helperShutdownRequestsCounter = counter(
      'choria_provisioner_helper_shutdown_requests',
      'How many times a helper requested a node be shut down',
      ['site'],
    );

    this.admissionRefusedCounter = counter(
      'choria_provisioner_admission_refused_total',
      'Sightings not admitted: held (already admitted within the interval), full (work queue at capacity) or backoff (a failing node before its wait ended); not counted as discovered',
      ['site', 'reason'],
    );
    this.backoffNodesGauge = gauge(
      'choria_provisioner_backoff_nodes',
      'Nodes whose last cycles failed, each admitted again only after its backoff (rxfleet.failure_backoff)',
    );
    this.recordsCounter = counter(
      'choria_provisioner_records_total',
      'Provisioning records (rxfleet.records): written (acknowledged by the stream), failed (refused or unanswered) or dropped (too many unanswered already)',
      ['site', 'result'],
    );
    this.lockRefusalsCounter = counter(
      'choria_provisioner_lock_refusals_total',
      'Nodes whose provisioning lock is held by another provisioner; not retried, not a provision error',
      ['site'],
    );
    this.malformedInputCounter = counter(
      'choria_provisioner_malformed_input_total',
      'Messages dropped because they could not be decoded, by where they came from',
      ['site', 'source'],
    );
    this.unexpectedRepliesCounter = counter(
      'choria_provisioner_unexpected_replies_total',
      'Well-formed replies that answered no waiting request: unsolicited (its request id is not waited for: late, after a timeout or an outage) or stranger (from another node than the one asked)',
      ['site', 'reason'],
    );
    this.readmissionsCounter = counter(
      'choria_provisioner_readmissions_total',
      'Sightings of a node already admitted whose work had not moved for an interval, admitted again (DECISIONS P1); not counted as discovered',
      ['site', 'via'],
    );
    // Named beside upstream's discovered and event_discovered (no _total), so the three sources
    // read alike on a dashboard.
    this.incusDiscoveredCounter = counter(
      'choria_provisioner_incus_discovered',
      'How many nodes were found through an Incus instance coming up with an address',
      ['site'],
    );
    this.incusEventsCounter = counter(
      'choria_provisioner_incus_events_total',
      'Enriched Incus instance events read by the Incus feed, by what became of them: sighted, already_up, not_up, unselected, unmapped',
      ['site', 'result'],
    );

    this.zero();
  }

  /** Makes every series exist at zero (DECISIONS P2); the constructor already did. */
  private zero(): void {
    const site = this.site;
    for (const c of [
      this.discoveredCounter,
      this.eventDiscoveredCounter,
      this.incusDiscoveredCounter,
      this.discoverCyclesCounter,
      this.discoveryErrorsCounter,
      this.provisionErrorsCounter,
      this.provisionedCounter,
      this.helperErrorsCounter,
      this.helperShutdownRequestsCounter,
      this.lockRefusalsCounter,
    ]) {
      c.inc({ site }, 0);
    }
    for (const g of [this.busyWorkersGauge, this.workQueueEntriesGauge, this.waitingNodesGauge, this.pausedGauge, this.backoffNodesGauge])
      g.set({ site }, 0);
    for (const result of RECORD_RESULTS) this.recordsCounter.inc({ site, result }, 0);
    for (const rpc of PROVISIONER_RPCS) {
      this.rpcErrorsCounter.inc({ site, rpc }, 0);
      this.rpcTimeSummary.observe({ site, rpc }, 0);
    }
    this.helperTimeSummary.observe({ site }, 0);
    // prom-client has no way to create a summary series without an observation: observe once,
    // then reset, which keeps the series at count 0 and sum 0.
    this.rpcTimeSummary.reset();
    this.helperTimeSummary.reset();
    for (const reason of ADMISSION_REFUSAL_REASONS) this.admissionRefusedCounter.inc({ site, reason }, 0);
    for (const source of MALFORMED_INPUT_SOURCES) this.malformedInputCounter.inc({ site, source }, 0);
    for (const reason of UNEXPECTED_REPLY_REASONS) this.unexpectedRepliesCounter.inc({ site, reason }, 0);
    for (const via of SIGHTING_SOURCES) this.readmissionsCounter.inc({ site, via }, 0);
    for (const result of INCUS_EVENT_RESULTS) this.incusEventsCounter.inc({ site, result }, 0);
  }

  /** An identity admitted again while held (DECISIONS P1): counted here, not as discovered. */
  readmitted(via: (typeof SIGHTING_SOURCES)[number]): void {
    this.readmissionsCounter.inc({ site: this.site, via });
  }

  /** An identity admitted from broadcast discovery (once while it is held, as upstream counts). */
  discovered(): void {
    this.discoveredCounter.inc(this.labels);
  }

  /** An identity admitted from a lifecycle startup event (once while it is held). */
  eventDiscovered(): void {
    this.eventDiscoveredCounter.inc(this.labels);
  }

  /** An identity admitted from an Incus instance that came up (once while it is held). */
  incusDiscovered(): void {
    this.incusDiscoveredCounter.inc(this.labels);
  }

  /** What became of one instance event on the Incus feed. */
  incusEvent(result: IncusEventResult): void {
    this.incusEventsCounter.inc({ site: this.site, result });
  }

  /** A discovery actually performed (not skipped while paused). */
  discoverCycle(): void {
    this.discoverCyclesCounter.inc(this.labels);
  }

  /** A broadcast discovery that failed. */
  discoveryError(): void {
    this.discoveryErrorsCounter.inc(this.labels);
  }

  /** A provisioning cycle that ended in an error (defer and stale sightings included, as upstream). */
  provisionError(): void {
    this.provisionErrorsCounter.inc(this.labels);
  }

  /** A provisioning cycle that ended without error (helper shutdowns and upgrades included: P7). */
  provisioned(): void {
    this.provisionedCounter.inc(this.labels);
  }

  /** Workers inside a provisioning cycle now. */
  setBusyWorkers(count: number): void {
    this.busyWorkersGauge.set(this.labels, count);
  }

  /** Admitted tickets not yet started (DECISIONS P4). */
  setWorkQueueEntries(count: number): void {
    this.workQueueEntriesGauge.set(this.labels, count);
  }

  /** Identities held by the admission ledger (queued, running, or held after their work). */
  setWaitingNodes(count: number): void {
    this.waitingNodesGauge.set(this.labels, count);
  }

  /** The pause state (1 paused, 0 running). */
  setPaused(paused: boolean): void {
    this.pausedGauge.set(this.labels, paused ? 1 : 0);
  }

  /** One RPC attempt took `seconds`, whether it succeeded or not. */
  observeRpc(rpc: ProvisionerRpc, seconds: number): void {
    this.rpcTimeSummary.observe({ site: this.site, rpc }, seconds);
  }

  /** An RPC failed after all its attempts (counted once per call, not per attempt). */
  rpcError(rpc: ProvisionerRpc): void {
    this.rpcErrorsCounter.inc({ site: this.site, rpc });
  }

  /** One helper run took `seconds` (every run, including refused and failed ones). */
  observeHelper(seconds: number): void {
    this.helperTimeSummary.observe(this.labels, seconds);
  }

  /** The helper failed (could not start, timed out, exited non-zero, bad output). */
  helperError(): void {
    this.helperErrorsCounter.inc(this.labels);
  }

  /** A node acknowledged a shutdown the helper asked for. */
  helperShutdownRequest(): void {
    this.helperShutdownRequestsCounter.inc(this.labels);
  }

  /** A sighting not admitted, and why (DECISIONS P3, P22). */
  admissionRefused(reason: AdmissionRefusalReason): void {
    this.admissionRefusedCounter.inc({ site: this.site, reason });
  }

  /** Nodes whose last cycles failed, waiting out their backoff (P22). */
  setBackoffNodes(count: number): void {
    this.backoffNodesGauge.set(this.labels, count);
  }

  /** One provisioning record, and what became of it (P21). */
  record(result: RecordResult): void {
    this.recordsCounter.inc({ site: this.site, result });
  }

  /** A node whose provisioning lock another provisioner holds (DECISIONS P10). */
  lockRefused(): void {
    this.lockRefusalsCounter.inc(this.labels);
  }

  /** A message dropped as undecodable. */
  malformedInput(source: MalformedInputSource): void {
    this.malformedInputCounter.inc({ site: this.site, source });
  }

  /** A well-formed reply skipped because it answered no waiting request. */
  unexpectedReply(reason: UnexpectedReplyReason): void {
    this.unexpectedRepliesCounter.inc({ site: this.site, reason });
  }
}
