import { NatsConnection } from '@nats-io/transport-node';
import { Observable, Subject, Subscription, from, switchMap, timer } from 'rxjs';
import { PoolResult } from '@rxfleet/operators';
import { errorMessage } from '../../lib/choria/errors';
import { Logger } from '../../lib/logger';
import { RecordSettings } from '../../lib/provision/config/config';
import { CycleResult } from '../../lib/provision/cycle/cycleResult';
import { CycleTraces } from '../../lib/provision/cycle/cycleTrace';
import { ProvisionerMetrics, RecordResult } from '../../lib/provision/metrics/metrics';
import { NodeBackoff } from '../../lib/provision/backoff/nodeBackoff';
import { PipelineHooks } from '../../lib/provision/pipeline';
import { CycleRecord, RECORD_VERSION, cycleRecord } from '../../lib/provision/records/cycleRecord';
import { InstanceMode, InstanceRecord, oldestOf } from '../../lib/provision/records/instanceRecord';
import { instanceSubject, nodeSubject } from '../../lib/provision/records/recordSubjects';
import { RateLimitedLog } from '../../lib/rateLimitedLog';
import { singleReplicaWarning } from '../../lib/bucketLayout';
import { RecordSink, natsRecordSink, prepareRecordStream } from '../../streams/records/recordStream';
import { ActiveActive } from './activeActive';
import { DaemonSetting, ProvisionerStatus } from './daemonTypes';
import { HostTicket } from '../../lib/provision/sightings/sighting';

/** How often an instance writes its own record by default, ms. */
export const INSTANCE_RECORD_EVERY_MS = 10_000;

/** What {@link startRecords} records from, besides the daemon's setting. */
export interface RecordParts {
  nc: NatsConnection;
  metrics: ProvisionerMetrics;
  traces: CycleTraces;
  backoff: NodeBackoff | undefined;
  /** Active-active: the revision of this instance's claim on a node, taken once its cycle is recorded. */
  activeActive: ActiveActive | undefined;
  status: () => ProvisionerStatus;
}

/** The records of a running provisioner. */
export interface ProvisionRecords {
  /** `base` with the admissions and finished cycles noted. */
  hooks(base: PipelineHooks): PipelineHooks;
  /** Every cycle's record as it is made, whether or not it is written (benches and specs count them). */
  readonly cycles$: Observable<CycleRecord>;
  /** What this instance is doing now, as its record says it. */
  instance(): InstanceRecord;
  /** Writes the instance's last record and waits a little for what is pending. */
  close(): Promise<void>;
}

/**
 * The provisioning records (DECISIONS P21), wired. Every finished cycle becomes a
 * {@link CycleRecord} (made whether or not records are on, for `cycles$`); with `rxfleet.records`
 * each is appended to `<records_subject>.node.<node>` and, every `everyMs`, the instance's own
 * {@link InstanceRecord} to `<records_subject>.instance.<identity>`. The stream is read (and made,
 * with `records_create`) at start, and a stream with one replica on a cluster is warned about.
 *
 * Guarantees: a record that cannot be written is counted (`records_total{result}`) and logged a
 * few times a minute; nothing here waits on the stream or throws into the pipeline, so the stream
 * refusing writes (full, no leader, missing) changes nothing about provisioning.
 */
export function startRecords(setting: DaemonSetting, parts: RecordParts): ProvisionRecords {
  return new RecordKeeper(setting, parts);
}

/** {@link startRecords}'s records: the admitted nodes and the cycles, and where they are written. */
class RecordKeeper implements ProvisionRecords {
  private readonly settings: RecordSettings | undefined;
  /** How often the instance's own record is written: the tuning's, else `records_every`. */
  private readonly everyMs: number;
  private readonly startedAt = new Date().toISOString();
  private readonly mode: InstanceMode;
  private readonly cycles = new Subject<CycleRecord>();
  readonly cycles$ = this.cycles.asObservable();
  /** Admitted and not finished, in the order admitted; a node whose cycle runs is in `traces` too. */
  private readonly admitted = new Map<string, HostTicket>();
  private readonly failures: RateLimitedLog;
  private readonly watches = new Subscription();
  /** Where records go: the JetStream stream of `rxfleet.records_*`; undefined when records are off. */
  private readonly sink: RecordSink | undefined;

  constructor(
    private readonly setting: DaemonSetting,
    private readonly parts: RecordParts,
  ) {
    const { config, tuning, logger, scheduler, identity } = setting;
    this.settings = config.rxfleet.records;
    this.everyMs = tuning.instanceRecordEveryMs ?? this.settings?.everyMs ?? INSTANCE_RECORD_EVERY_MS;
    this.mode = config.rxfleet.mode === 'active-active' ? 'active-active' : config.leaderElection ? 'leader_election' : 'single';
    this.failures = new RateLimitedLog({ logger, level: 'warn', burst: 3, scheduler });
    const settings = this.settings;
    if (settings === undefined) return;
    this.sink = natsRecordSink({ nc: parts.nc, onResult: (result, error) => this.written(settings, result, error) });
    // The instance's own record from the start, but after the stream has been looked at (and made).
    this.watches.add(
      from(prepareStream(parts.nc, settings, logger))
        .pipe(switchMap(() => timer(0, this.everyMs, scheduler)))
        .subscribe(() => this.sink?.append(instanceSubject(settings.subject, identity), this.instance())),
    );
  }

  /** Counts each write; a failed one is logged a few times a minute, and provisioning goes on. */
  private written(settings: RecordSettings, result: RecordResult, error: unknown): void {
    this.parts.metrics.record(result);
    if (result === 'written') return;
    const why = result === 'dropped' ? 'too many records unanswered already' : errorMessage(error);
    this.failures.log(
      'records',
      { stream: settings.stream, result },
      `a provisioning record could not be written to ${settings.stream}: ${why}; provisioning goes on`,
    );
  }

  /** A time on the scheduler's clock, on the wall clock. */
  private readonly wall = (at: number): string => new Date(Date.now() - (this.setting.scheduler.now() - at)).toISOString();

  instance(): InstanceRecord {
    const { config, identity, version } = this.setting;
    const { traces, backoff } = this.parts;
    const now = this.parts.status();
    const running = [...traces.inFlight()];
    const runningNodes = new Set(running.map((t) => t.identity));
    const failing = backoff === undefined ? [] : [...backoff.list()].map(([node, entry]): [string, number] => [node, entry.failingSince]);
    return {
      type: 'instance',
      v: RECORD_VERSION,
      instance: identity,
      site: config.site,
      version,
      mode: this.mode,
      leader: now.leader,
      paused: now.paused,
      state: now.state,
      connection: now.connection,
      workers: config.workers,
      held: now.held,
      waiting: oldestOf(
        [...this.admitted].map(([node, ticket]): [string, number] => [node, ticket.admittedAt]),
        this.wall,
        (node) => runningNodes.has(node),
      ),
      inFlight: oldestOf(
        running.map((t): [string, number] => [t.identity, t.startedAt]),
        this.wall,
      ),
      failing: oldestOf(failing, this.wall),
      backoffCeilingMs: config.rxfleet.failureBackoffMs,
      startedAt: this.startedAt,
      at: new Date().toISOString(),
      every: this.everyMs,
    };
  }

  hooks(base: PipelineHooks): PipelineHooks {
    return {
      ...base,
      admitted: (ticket) => {
        this.admitted.delete(ticket.key);
        this.admitted.set(ticket.key, ticket);
        base.admitted?.(ticket);
      },
      finished: (result) => {
        base.finished?.(result);
        this.finished(result);
      },
    };
  }

  /** A cycle ended: its record goes to `cycles$` and, with records on, to the stream. */
  private finished(result: PoolResult<HostTicket, CycleResult>): void {
    const { config, identity, scheduler } = this.setting;
    const node = result.ticket.key;
    // A ticket superseded by a newer one of the same node leaves the newer one admitted.
    if (this.admitted.get(node) === result.ticket) this.admitted.delete(node);
    const record = cycleRecord({
      result,
      trace: this.parts.traces.take(node),
      instance: identity,
      site: config.site,
      claimRevision: this.parts.activeActive?.claimRevision(node),
      backoff: this.parts.backoff?.entry(node),
      secret: config.token,
      now: scheduler.now(),
      wallNow: Date.now(),
    });
    if (record === undefined) return;
    this.cycles.next(record);
    if (this.settings !== undefined) this.sink?.append(nodeSubject(this.settings.subject, node), record);
  }

  async close(): Promise<void> {
    this.watches.unsubscribe();
    if (this.settings !== undefined && this.sink !== undefined && !this.parts.nc.isClosed()) {
      // The last word of a stopping instance: status calls it gone at once rather than after three periods.
      this.sink.append(instanceSubject(this.settings.subject, this.setting.identity), { ...this.instance(), state: 'stopped' });
      await this.sink.flush(2000);
    }
    this.failures.close();
    this.cycles.complete();
  }
}

/**
 * Reads the records stream (and makes it, with `records_create`) and says what it found: where the
 * records go, a stream with one replica on a cluster, or a stream it cannot read (records are
 * written all the same, each failure counted). Never rejects.
 */
function prepareStream(nc: NatsConnection, settings: RecordSettings, logger: Logger): Promise<void> {
  return prepareRecordStream(nc, settings).then((state) => {
    if (state.kind === 'unknown') {
      logger.warn(
        { stream: settings.stream },
        `the records stream ${settings.stream} cannot be read (${state.reason}): records are written to ${settings.subject}.> all the same, each failure counted`,
      );
      return;
    }
    logger.info(
      { stream: settings.stream, replicas: state.layout.replicas },
      `${state.kind === 'created' ? 'made the records stream' : 'provisioning records go to'} ${settings.stream} (${settings.subject}.>)`,
    );
    const warning = singleReplicaWarning(state.layout);
    // The buckets' warning, said of a stream (whose name has no KV_ before it).
    if (warning !== undefined) logger.warn({ stream: settings.stream }, warning.replace(/\bbucket\b/, 'stream').replace(/KV_/, ''));
  });
}
