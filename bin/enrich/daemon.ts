/**
 * `rxfleet enrich` in one process, without the command line: the Incus client (REST and the event
 * websocket), the enricher, the outputs (NATS subjects and JSON lines), the monitor endpoint, and
 * the graceful stop of DECISIONS P9, in the daemon contract `rxfleet provision` keeps too
 * (`bin/daemon/contract.ts`). The command parses flags and files into settings and calls
 * {@link startEnrichDaemon}; specs call it directly with the same settings.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { Observable, SchedulerLike } from 'rxjs';
import { errorMessage } from '../../lib/choria/errors';
import { IncusReader, IncusStreamItem } from '../../lib/incus/api';
import { Logger, silentLogger } from '../../lib/logger';
import { incusEndpoint } from '../../streams/incus/incusEndpoint';
import { incusEvents } from '../../streams/incus/incusEvents';
import { IncusRestClient } from '../../streams/incus/incusRestClient';
import { CredentialWatch } from '../../streams/credentialWatch';
import { EnricherSettings } from '../../lib/enricher/config/config';
import { EnricherStatus } from '../../lib/enricher/pipeline/createEnricher';
import { EnrichDaemonMetrics } from '../../lib/enricher/metrics/daemonMetrics';
import { EventPayload } from '../../lib/enricher/output/payload';
import { Daemon, StopReport } from '../daemon/contract';
import { serveDaemonEndpoint } from '../daemon/endpoint';
import { enricherCredentials } from './credentials';
import { enricherOutputs } from './outputs';
import { PublishedEventMetrics } from './publishedEventMetrics';
import type { PublisherState } from '../../streams/natsPublisher';
import { hostname } from 'node:os';
import { DurableMetrics } from '../../lib/enricher/metrics/durableMetrics';
import { StateSnapshot } from '../../streams/jetstream/stateBucket';
import { DurableOutput } from './durableOutput';
import { Standby, startStandby } from './standby';
import { Terms } from './terms';

/** What a caller (a spec, a bench, an embedding program) may put in place of the real parts. */
export interface EnrichDaemonOverrides {
  /** Default silent. */
  logger?: Logger;
  /** Default a new one: every metric of the daemon, the enricher and the Incus client lands here. */
  registry?: Registry;
  /** Replaces the REST client (specs and benches with `FakeIncus`). */
  reader?: IncusReader;
  /** Replaces the event websocket. */
  events$?: Observable<IncusStreamItem>;
  /** Where `outputs.stdout` lines go. Default `process.stdout`. */
  stdout?: Writable;
  /** The enricher's scheduler. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /**
   * A consumer in the same process (the provisioner, in `rxfleet provision-incus`): handed every
   * event's payload, in order, before the other outputs; with it, no other output is required.
   */
  consumer?: (payload: EventPayload) => void;
  /** Told each JetStream acknowledgement's latency, seconds (benches: exact percentiles beside the histogram). */
  onAck?: (seconds: number) => void;
}

/** What `/health` and `/ready` say, beside `status`. */
export interface EnrichDaemonStatus extends EnricherStatus {
  /** The Incus server (socket path or https origin). */
  incus: string;
  /** `off` when events are not published to NATS. */
  nats: PublisherState | 'off';
  /** Events held for NATS. */
  held: number;
  /** The JetStream output's connection; `off` without one. */
  jetstream: PublisherState | 'off';
  /** Events not yet acknowledged by the stream. */
  jetstreamHeld: number;
  /**
   * `active` enriches; `standby` waits for the election (`standby:`); `starting` reads back what
   * consumers were told, or waits for NATS, before the first event.
   */
  role: 'starting' | 'active' | 'standby';
  stopping: boolean;
}

/** A running enricher: the daemon contract; it stops by itself only if its event stream ends or its pipeline fails. */
export type EnrichDaemon = Daemon<EnrichDaemonStatus>;

/** A setting the daemon cannot run with (no output at all). */
export class EnrichDaemonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnrichDaemonError';
  }
}

/**
 * Starts `rxfleet enrich`: resolves once the monitor endpoint listens. NATS is not waited for:
 * until it is reachable, events are held (up to `maxHeld`) and sent in order when it is, so a
 * broker outage never holds up or crashes the enricher. With a JetStream output, the enricher
 * starts once the stream (and the state bucket) are checked and what consumers were last told is
 * read back, so sequences continue and the first round says only what changed; with `standby`,
 * only while it leads its election. Throws (before anything runs) for settings that cannot work:
 * no output, an Incus endpoint that cannot be built, a port that cannot be listened on, a data
 * directory that cannot be created. A stream or bucket that is missing (and not to be created)
 * stops the daemon with `failed` saying so.
 *
 * `stop` (DECISIONS P9): stop taking events (the listener closes), hand on the whole line in order,
 * write the cold store a last time, send everything to the outputs (waiting for the stream's
 * acknowledgements), drain NATS, close the monitor endpoint. `stopped` says `failed` when the event
 * stream ended by itself or the pipeline errored (logged first; the outputs still get what was
 * already handed on).
 */
export async function startEnrichDaemon(settings: EnricherSettings, overrides: EnrichDaemonOverrides = {}): Promise<EnrichDaemon> {
  const logger = overrides.logger ?? silentLogger;
  const registry = overrides.registry ?? new Registry();
  const { nats: natsSettings, jetstream: jsSettings } = settings.outputs;
  if (natsSettings === undefined && jsSettings === undefined && !settings.outputs.stdout && overrides.consumer === undefined)
    throw new EnrichDaemonError(
      'no output: publish to NATS (outputs.nats.url, --nats), to a JetStream stream (outputs.jetstream) or write JSON lines (outputs.stdout, --stdout)',
    );
  if (natsSettings !== undefined && natsSettings.servers.length === 0)
    throw new EnrichDaemonError('outputs.nats names no server (outputs.nats.url, --nats)');

  const endpoint = overrides.reader !== undefined && overrides.events$ !== undefined ? undefined : incusEndpoint(settings.incus);
  const incusAddress = endpoint?.address ?? 'injected';
  const storeFile = settings.storeFile;
  if (storeFile !== undefined) mkdirSync(dirname(storeFile), { recursive: true, mode: 0o700 });

  const metrics = new EnrichDaemonMetrics(registry);
  const restClient =
    overrides.reader === undefined ? new IncusRestClient({ endpoint, readTimeoutMs: settings.readTimeout, logger, registry }) : undefined;

  let stopping = false;
  // The TLS files and .creds are read again at every NATS (re)connection; the watch logs what
  // changed and exports each credential's expiry, the Incus client's and server's certificates too.
  const watch = new CredentialWatch({ credentials: enricherCredentials(settings), logger, registry });
  watch.check();
  const stopWatch = watch.every();
  // Listening first: a port that cannot be had stops the start before NATS is dialled.
  const monitor =
    settings.http === undefined
      ? undefined
      : await serveDaemonEndpoint({
          address: settings.http,
          registry,
          ready: () => ready(),
          status: () => status(),
          login: () => watch.problem(),
          logger,
        }).catch((error: unknown) => {
          stopWatch();
          throw error;
        });
  const durableMetrics = jsSettings === undefined ? undefined : new DurableMetrics(registry);
  const durable =
    jsSettings === undefined || durableMetrics === undefined
      ? undefined
      : new DurableOutput(jsSettings, settings.outputs.state, {
          logger,
          metrics: durableMetrics,
          published: metrics,
          watch,
          onAck: overrides.onAck,
        });
  const outputs = enricherOutputs(settings, {
    logger,
    metrics,
    published: new PublishedEventMetrics(registry),
    watch,
    stdout: overrides.stdout ?? process.stdout,
    consumer: overrides.consumer,
    durable,
  });
  let standby: Standby | undefined;
  const terms = new Terms({
    settings,
    logger,
    registry,
    scheduler: overrides.scheduler,
    reader: overrides.reader ?? (restClient as IncusRestClient),
    events$: () => overrides.events$ ?? incusEvents({ endpoint, logger, registry }),
    storeFile,
    publish: outputs.publish,
    onEnd: (failed) => void finish(failed),
  });
  const role = (): EnrichDaemonStatus['role'] => (terms.running ? 'active' : standby !== undefined ? 'standby' : 'starting');
  const natsReady = (): boolean => outputs.nats() === 'off' || outputs.nats() === 'connected';
  const durableReady = (): boolean => durable === undefined || (durable.ready && durable.status() === 'connected');
  const ready = (): boolean =>
    !stopping && natsReady() && durableReady() && (terms.running ? terms.status().ready : (standby?.ready() ?? false));
  const status = (): EnrichDaemonStatus => ({
    ...terms.status(),
    ready: ready(),
    incus: incusAddress,
    nats: outputs.nats(),
    held: outputs.held(),
    jetstream: durable?.status() ?? 'off',
    jetstreamHeld: durable?.held() ?? 0,
    role: role(),
    stopping,
  });

  logger.info(
    {
      incus: incusAddress,
      nats: natsSettings?.servers,
      subjectPrefix: natsSettings?.subjectPrefix,
      jetstream:
        jsSettings === undefined
          ? undefined
          : { servers: jsSettings.servers, stream: jsSettings.stream, bucket: settings.outputs.state?.bucket },
      standby: settings.standby === undefined ? undefined : { bucket: settings.standby.bucket, key: settings.standby.key },
      stdout: settings.outputs.stdout,
      inProcess: overrides.consumer !== undefined,
      http: monitor?.port,
      projects: settings.projects,
      instances: settings.instances,
      dataDir: storeFile === undefined ? undefined : dirname(storeFile),
      workers: settings.workers,
    },
    'rxfleet enrich running',
  );

  let resolveStopped: (report: StopReport) => void = () => undefined;
  const stopped = new Promise<StopReport>((resolve) => (resolveStopped = resolve));
  const opening = new AbortController();
  let finishing: Promise<StopReport> | undefined;
  // Everything after the enricher has handed on its last event, whichever way it ended.
  const finish = (failed?: string): Promise<StopReport> =>
    (finishing ??= (async () => {
      stopping = true;
      opening.abort();
      standby?.stop();
      await terms.end('drain');
      await outputs.close();
      restClient?.close();
      await monitor?.close();
      stopWatch();
      const report: StopReport = failed === undefined ? { abandoned: 0 } : { abandoned: 0, failed };
      logger.info({ end: failed === undefined ? 'stopped' : 'failed' }, 'rxfleet enrich stopped');
      resolveStopped(report);
      return report;
    })());

  if (durable === undefined) terms.begin(undefined);
  else
    void (async () => {
      await durable.open(opening.signal);
      if (stopping) return;
      if (settings.standby === undefined) {
        const told = await durable.begin();
        if (!stopping) terms.begin(told);
        return;
      }
      durableMetrics?.active.set(0);
      standby = await startStandby({
        settings: settings.standby,
        identity: settings.standby.identity ?? hostname(),
        connection: durable.nc,
        stateBucket: (settings.outputs.state as { bucket: string }).bucket,
        registry,
        logger,
        onWon: (snapshot) => void takeOver(snapshot),
        onLost: () => {
          durableMetrics?.active.set(0);
          // Both drop what they hold before they return (their waits come after): a term won
          // again at once starts on a clean publisher, which nothing later abandons.
          void durable.end('abandon');
          void terms.end('abandon');
        },
      });
    })().catch((error: unknown) => {
      if (stopping) return;
      logger.error({ err: error }, `the JetStream output cannot start: ${errorMessage(error)}`);
      void finish(errorMessage(error));
    });
  const takeOver = async (snapshot: StateSnapshot | undefined): Promise<void> => {
    const told = await (durable as DurableOutput).begin(snapshot);
    // Lost again (or stopping) while reading back: nothing was published in this term.
    if (stopping || standby?.leads() !== true) return void (await (durable as DurableOutput).end('abandon'));
    durableMetrics?.takeovers.inc();
    durableMetrics?.active.set(1);
    terms.begin(told);
  };
  if (durable === undefined || settings.standby === undefined) durableMetrics?.active.set(1);

  return {
    port: monitor?.port,
    registry,
    status,
    ready,
    stop: async () => {
      if (!stopping) {
        stopping = true;
        logger.info('stopping: handing on what the enricher holds');
      }
      return finish();
    },
    // Nothing the enricher starts outlives the process: its reads are sockets.
    abort: () => undefined,
    stopped,
  };
}
