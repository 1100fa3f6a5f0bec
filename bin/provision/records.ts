import { NatsConnection } from '@nats-io/transport-node';
import { Observable, SchedulerLike, Subject, Subscription, from, switchMap, timer } from 'rxjs';
import { errorMessage } from '../../lib/choria/errors';
import { Logger } from '../../lib/logger';
import { ProvisionerConfig } from '../../lib/provision/config/config';
import { CycleTraces } from '../../lib/provision/cycle/cycleTrace';
import { ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { NodeBackoff } from '../../lib/provision/backoff/nodeBackoff';
import { PipelineHooks } from '../../lib/provision/pipeline';
import { CycleRecord, RECORD_VERSION, cycleRecord } from '../../lib/provision/records/cycleRecord';
import { InstanceMode, InstanceRecord, oldestOf } from '../../lib/provision/records/instanceRecord';
import { instanceSubject, nodeSubject } from '../../lib/provision/records/recordSubjects';
import { RateLimitedLog } from '../../lib/rateLimitedLog';
import { singleReplicaWarning } from '../../lib/bucketLayout';
import { RecordSink, natsRecordSink, prepareRecordStream } from '../../streams/records/recordStream';
import { ProvisionerStatus } from './daemonTypes';
import { HostTicket } from '../../lib/provision/sightings/sighting';

/** How often an instance writes its own record by default, ms. */
export const INSTANCE_RECORD_EVERY_MS = 10_000;

/** What {@link startRecords} needs. */
export interface RecordParts {
  config: ProvisionerConfig;
  identity: string;
  version: string;
  nc: NatsConnection;
  metrics: ProvisionerMetrics;
  logger: Logger;
  scheduler: SchedulerLike;
  traces: CycleTraces;
  backoff: NodeBackoff | undefined;
  /** Active-active: the revision of this instance's claim on a node, taken once its cycle is recorded. */
  claimRevision?: (identity: string) => number | undefined;
  status: () => ProvisionerStatus;
  /** How often the instance's own record is written. Default `records_every`, else {@link INSTANCE_RECORD_EVERY_MS}. */
  everyMs?: number;
  /** Default `Date.now`. */
  wallClock?: () => number;
  /** Where records go; default the JetStream stream of `rxfleet.records_*` over `nc`. */
  sink?: RecordSink;
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
export function startRecords(parts: RecordParts): ProvisionRecords {
  const { config, identity, version, nc, metrics, logger, scheduler, traces, backoff, status } = parts;
  const settings = config.rxfleet.records;
  const wallClock = parts.wallClock ?? Date.now;
  const everyMs = parts.everyMs ?? settings?.everyMs ?? INSTANCE_RECORD_EVERY_MS;
  const wall = (at: number): string => new Date(wallClock() - (scheduler.now() - at)).toISOString();
  const startedAt = new Date(wallClock()).toISOString();
  const mode: InstanceMode =
    config.rxfleet.mode === 'active-active' ? 'active-active' : config.leaderElection ? 'leader_election' : 'single';
  const cycles = new Subject<CycleRecord>();
  // Admitted and not finished, in the order admitted; a node whose cycle runs is in `traces` too.
  const admitted = new Map<string, HostTicket>();
  const failures = new RateLimitedLog({ logger, level: 'warn', burst: 3, scheduler });
  const watches = new Subscription();

  const sink =
    settings === undefined
      ? undefined
      : (parts.sink ??
        natsRecordSink({
          nc,
          onResult: (result, error) => {
            metrics.record(result);
            if (result === 'written') return;
            const why = result === 'dropped' ? 'too many records unanswered already' : errorMessage(error);
            failures.log(
              'records',
              { stream: settings.stream, result },
              `a provisioning record could not be written to ${settings.stream}: ${why}; provisioning goes on`,
            );
          },
        }));

  let prepared: Promise<void> = Promise.resolve();
  if (settings !== undefined) {
    prepared = prepareRecordStream(nc, settings).then((state) => {
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
    // The instance's own record from the start, but after the stream has been looked at (and made).
    watches.add(
      from(prepared)
        .pipe(switchMap(() => timer(0, everyMs, scheduler)))
        .subscribe(() => sink?.append(instanceSubject(settings.subject, identity), instance())),
    );
  }

  function instance(): InstanceRecord {
    const now = status();
    const running = [...traces.inFlight()];
    const runningNodes = new Set(running.map((t) => t.identity));
    const failing = backoff === undefined ? [] : [...backoff.list()].map(([node, entry]): [string, number] => [node, entry.failingSince]);
    return {
      type: 'instance',
      v: RECORD_VERSION,
      instance: identity,
      site: config.site,
      version,
      mode,
      leader: now.leader,
      paused: now.paused,
      state: now.state,
      connection: now.connection,
      workers: config.workers,
      held: now.held,
      waiting: oldestOf(
        [...admitted].map(([node, ticket]): [string, number] => [node, ticket.admittedAt]),
        wall,
        (node) => runningNodes.has(node),
      ),
      inFlight: oldestOf(
        running.map((t): [string, number] => [t.identity, t.startedAt]),
        wall,
      ),
      failing: oldestOf(failing, wall),
      backoffCeilingMs: config.rxfleet.failureBackoffMs,
      startedAt,
      at: new Date(wallClock()).toISOString(),
      every: everyMs,
    };
  }

  return {
    hooks: (base) => ({
      ...base,
      admitted: (ticket) => {
        admitted.delete(ticket.key);
        admitted.set(ticket.key, ticket);
        base.admitted?.(ticket);
      },
      finished: (result) => {
        base.finished?.(result);
        const node = result.ticket.key;
        // A ticket superseded by a newer one of the same node leaves the newer one admitted.
        if (admitted.get(node) === result.ticket) admitted.delete(node);
        const record = cycleRecord({
          result,
          trace: traces.take(node),
          instance: identity,
          site: config.site,
          claimRevision: parts.claimRevision?.(node),
          backoff: backoff?.entry(node),
          secret: config.token,
          now: scheduler.now(),
          wallNow: wallClock(),
        });
        if (record === undefined) return;
        cycles.next(record);
        if (settings !== undefined) sink?.append(nodeSubject(settings.subject, node), record);
      },
    }),
    cycles$: cycles.asObservable(),
    instance,
    close: async () => {
      watches.unsubscribe();
      if (settings !== undefined && sink !== undefined && !nc.isClosed()) {
        // The last word of a stopping instance: status calls it gone at once rather than after three periods.
        sink.append(instanceSubject(settings.subject, identity), { ...instance(), state: 'stopped' });
        await sink.flush(2000);
      }
      failures.close();
      cycles.complete();
    },
  };
}
