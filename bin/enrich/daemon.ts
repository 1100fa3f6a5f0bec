/**
 * `rxfleet enrich` in one process, without the command line: the Incus client (REST and the event
 * websocket), the enricher, the outputs (NATS subjects and JSON lines), the monitor endpoint, and
 * the graceful stop of DECISIONS P9, in the daemon contract `rxfleet provision` keeps too
 * (`bin/daemon/contract.ts`). The command parses flags and files into settings and calls
 * {@link startEnrichDaemon}; specs call it directly with the same settings.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Registry } from 'prom-client';
import { silentLogger, Logger } from '../../lib/logger';
import { incusEndpoint } from '../../streams/incus/incusEndpoint';
import { incusEvents } from '../../streams/incus/incusEvents';
import { IncusRestClient } from '../../streams/incus/incusRestClient';
import { CredentialWatch } from '../../streams/credentialWatch';
import { EnricherSettings } from '../../lib/enricher/config/config';
import { EnrichDaemonMetrics } from '../../lib/enricher/metrics/daemonMetrics';
import { DurableMetrics } from '../../lib/enricher/metrics/durableMetrics';
import { StopReport } from '../daemon/contract';
import { serveDaemonEndpoint } from '../daemon/endpoint';
import { MonitorEndpoint } from '../../streams/monitorEndpoint';
import { beginTerms } from './beginTerms';
import { enricherCredentials } from './credentials';
import { EnrichDaemon, EnrichDaemonError, EnrichDaemonOverrides } from './daemonTypes';
import { DurableOutput } from './durableOutput';
import { EnrichHealth } from './health';
import { EnricherOutputs, enricherOutputs } from './outputs';
import { PublishedEventMetrics } from './publishedEventMetrics';
import { Terms } from './terms';

export { EnrichDaemonError } from './daemonTypes';
export type { EnrichDaemon, EnrichDaemonOverrides, EnrichDaemonStatus } from './daemonTypes';

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
  refuseWithoutOutput(settings, overrides);
  const endpoint = overrides.reader !== undefined && overrides.events$ !== undefined ? undefined : incusEndpoint(settings.incus);
  const storeFile = settings.storeFile;
  if (storeFile !== undefined) mkdirSync(dirname(storeFile), { recursive: true, mode: 0o700 });

  const metrics = new EnrichDaemonMetrics(registry);
  const restClient =
    overrides.reader === undefined ? new IncusRestClient({ endpoint, readTimeoutMs: settings.readTimeout, logger, registry }) : undefined;
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
          ready: () => health.ready(),
          status: () => health.status(),
          login: () => watch.problem(),
          logger,
        }).catch((error: unknown) => {
          stopWatch();
          throw error;
        });
  const { outputs, durable } = openOutputs(settings, overrides, { logger, registry, metrics, watch });
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
  const incus = endpoint?.address ?? 'injected';
  const health = new EnrichHealth({ incus, terms, outputs, durable });
  logStart(settings, logger, { incus, inProcess: overrides.consumer !== undefined, http: monitor?.port });

  const opening = new AbortController();
  const { stop, finish, stopped } = enrichStop(logger, health, { opening, terms, outputs, restClient, monitor, stopWatch });
  beginTerms({ settings, logger, registry, terms, durable, health, signal: opening.signal, fail: (why) => void finish(why) });

  return {
    port: monitor?.port,
    registry,
    status: health.status,
    ready: health.ready,
    stop,
    // Nothing the enricher starts outlives the process: its reads are sockets.
    abort: () => undefined,
    stopped,
  };
}

/** Throws for settings that give the events nowhere to go: no output at all, or NATS with no server. */
function refuseWithoutOutput(settings: EnricherSettings, overrides: EnrichDaemonOverrides): void {
  const { nats, jetstream, stdout } = settings.outputs;
  if (nats === undefined && jetstream === undefined && !stdout && overrides.consumer === undefined)
    throw new EnrichDaemonError(
      'no output: publish to NATS (outputs.nats.url, --nats), to a JetStream stream (outputs.jetstream) or write JSON lines (outputs.stdout, --stdout)',
    );
  if (nats !== undefined && nats.servers.length === 0)
    throw new EnrichDaemonError('outputs.nats names no server (outputs.nats.url, --nats)');
}

/**
 * The outputs the settings name, open: the JetStream output (and state bucket) with its series,
 * when there is one, is one of them, and the terms begin through it (`beginTerms.ts`).
 */
function openOutputs(
  settings: EnricherSettings,
  overrides: EnrichDaemonOverrides,
  parts: { logger: Logger; registry: Registry; metrics: EnrichDaemonMetrics; watch: CredentialWatch },
): { outputs: EnricherOutputs; durable: DurableOutput | undefined } {
  const { logger, registry, metrics, watch } = parts;
  const { jetstream, state } = settings.outputs;
  const durable =
    jetstream === undefined
      ? undefined
      : new DurableOutput(jetstream, state, {
          logger,
          metrics: new DurableMetrics(registry),
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
  return { outputs, durable };
}

/** The first line: where events come from and where they go (servers, never credentials), and what is served. */
function logStart(
  settings: EnricherSettings,
  logger: Logger,
  running: { incus: string; inProcess: boolean; http: number | undefined },
): void {
  const { nats, jetstream, state, stdout } = settings.outputs;
  const { standby, storeFile } = settings;
  logger.info(
    {
      incus: running.incus,
      nats: nats?.servers,
      subjectPrefix: nats?.subjectPrefix,
      jetstream: jetstream === undefined ? undefined : { servers: jetstream.servers, stream: jetstream.stream, bucket: state?.bucket },
      standby: standby === undefined ? undefined : { bucket: standby.bucket, key: standby.key },
      stdout,
      inProcess: running.inProcess,
      http: running.http,
      projects: settings.projects,
      instances: settings.instances,
      dataDir: storeFile === undefined ? undefined : dirname(storeFile),
      workers: settings.workers,
    },
    'rxfleet enrich running',
  );
}

/**
 * P9 for the enricher, once it has handed on its last event, whichever way it ended: no term
 * begins any more (a JetStream output still waiting for NATS gives up, the standby's election
 * stops), the term drains (the whole line handed on in order, the cold store written a last
 * time), then the outputs send what they hold (waiting for the stream's acknowledgements) and close,
 * and so do the Incus client, the monitor endpoint and the credential watch. `finish` is idempotent (every call gets
 * the first call's report) and `stopped` resolves with the same report; `failed` says why the
 * daemon stopped by itself. `stop` is the daemon contract's: it says so in the log, then finishes.
 */
function enrichStop(
  logger: Logger,
  health: EnrichHealth,
  parts: {
    opening: AbortController;
    terms: Terms;
    outputs: EnricherOutputs;
    restClient: IncusRestClient | undefined;
    monitor: MonitorEndpoint | undefined;
    stopWatch: () => void;
  },
): { stop(): Promise<StopReport>; finish(failed?: string): Promise<StopReport>; stopped: Promise<StopReport> } {
  let resolveStopped: (report: StopReport) => void = () => undefined;
  const stopped = new Promise<StopReport>((resolve) => (resolveStopped = resolve));
  let finishing: Promise<StopReport> | undefined;
  const finish = (failed?: string): Promise<StopReport> =>
    (finishing ??= (async () => {
      health.stopping = true;
      parts.opening.abort();
      health.standby?.stop();
      await parts.terms.end('drain');
      await parts.outputs.close();
      parts.restClient?.close();
      await parts.monitor?.close();
      parts.stopWatch();
      const report: StopReport = failed === undefined ? { abandoned: 0 } : { abandoned: 0, failed };
      logger.info({ end: failed === undefined ? 'stopped' : 'failed' }, 'rxfleet enrich stopped');
      resolveStopped(report);
      return report;
    })());
  const stop = async (): Promise<StopReport> => {
    if (!health.stopping) {
      health.stopping = true;
      logger.info('stopping: handing on what the enricher holds');
    }
    return finish();
  };
  return { stop, finish, stopped };
}
