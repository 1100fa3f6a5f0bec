/**
 * `rxfleet enrich` in one process, without the command line: the Incus client (REST and the event
 * websocket), the enricher, the outputs (NATS subjects and JSON lines), the monitor endpoint, and
 * the graceful stop of DECISIONS P9. The command parses flags and files into settings and calls
 * {@link startEnrichDaemon}; specs call it directly with the same settings.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { Observable, SchedulerLike, Subscription } from 'rxjs';
import { IncusReader, IncusStreamItem } from '../../lib/incus/api';
import { Logger, silentLogger } from '../../lib/logger';
import { incusEndpoint } from '../../streams/incus/incusEndpoint';
import { incusEvents } from '../../streams/incus/incusEvents';
import { IncusRestClient } from '../../streams/incus/incusRestClient';
import { LineWriter, lineWriter } from '../../streams/lineWriter';
import { MonitorEndpoint, serveMonitorEndpoint } from '../../streams/monitorEndpoint';
import { openNatsConnection } from '../../streams/natsConnection';
import { CredentialWatch, WatchedCredential } from '../../streams/credentialWatch';
import { NatsPublisher, PublisherState } from '../../streams/natsPublisher';
import { fileColdStore } from '../../streams/coldStoreFile';
import { ColdStoreHooks } from '../../lib/enricher/coldStore/coldStore';
import { EnricherSettings } from '../../lib/enricher/config/config';
import { Enricher, EnricherStatus, createEnricher } from '../../lib/enricher/pipeline/createEnricher';
import { EnrichDaemonMetrics } from '../../lib/enricher/metrics/daemonMetrics';
import { EnrichedEvent } from '../../lib/enricher/model/event';
import { EventPayload, toPayload } from '../../lib/enricher/output/payload';
import { subjectFor } from '../../lib/enricher/output/subject';
import { PublishedEventMetrics } from './publishedEventMetrics';

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
}

/**
 * Why the daemon stopped: asked to (`stopped`), the event stream ended by itself
 * (`stream-ended`), or the pipeline failed: a stage threw, which is a bug (`failed`).
 */
export type DaemonEnd = 'stopped' | 'stream-ended' | 'failed';

/** What `/health` and `/ready` say, beside `status`. */
export interface EnrichDaemonStatus extends EnricherStatus {
  /** The Incus server (socket path or https origin). */
  incus: string;
  /** `off` when events are not published to NATS. */
  nats: PublisherState | 'off';
  /** Events held for NATS. */
  held: number;
  stopping: boolean;
}

/** A running daemon. */
export interface EnrichDaemon {
  /** The monitor endpoint's port, or `undefined` when `http` is off. */
  readonly port: number | undefined;
  readonly registry: Registry;
  /** The `/health` body. */
  status(): EnrichDaemonStatus;
  /** The Incus stream is connected, the model warm, NATS (when used) connected, and no stop is under way: `/ready`. */
  ready(): boolean;
  /**
   * The graceful stop (DECISIONS P9): stop taking events (the listener closes), hand on the whole
   * line in order, write the cold store a last time, send everything to the outputs, drain NATS,
   * close the monitor endpoint. Idempotent; resolves when all of it is done.
   */
  stop(): Promise<void>;
  /**
   * Resolves when the daemon has stopped: `stopped` after {@link stop}, `stream-ended` if the event
   * stream ended by itself, `failed` if the pipeline errored (logged first; the outputs still get
   * what was already handed on, and the command exits non-zero).
   */
  readonly done: Promise<DaemonEnd>;
}

/** A setting the daemon cannot run with (no output at all). */
export class EnrichDaemonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnrichDaemonError';
  }
}

/**
 * Starts `rxfleet enrich`: resolves once the monitor endpoint listens and the pipeline runs. NATS
 * is not waited for: until it is reachable, events are held (up to `maxHeld`) and sent in order
 * when it is, so a broker outage never holds up or crashes the enricher. Throws (before anything
 * runs) for settings that cannot work: no output, an Incus endpoint that cannot be built, a port
 * that cannot be listened on, a data directory that cannot be created.
 */
export async function startEnrichDaemon(settings: EnricherSettings, overrides: EnrichDaemonOverrides = {}): Promise<EnrichDaemon> {
  const logger = overrides.logger ?? silentLogger;
  const registry = overrides.registry ?? new Registry();
  const natsSettings = settings.outputs.nats;
  if (natsSettings === undefined && !settings.outputs.stdout && overrides.consumer === undefined)
    throw new EnrichDaemonError('no output: publish to NATS (outputs.nats.url, --nats) or write JSON lines (outputs.stdout, --stdout)');
  if (natsSettings !== undefined && natsSettings.servers.length === 0)
    throw new EnrichDaemonError('outputs.nats names no server (outputs.nats.url, --nats)');

  const endpoint = overrides.reader !== undefined && overrides.events$ !== undefined ? undefined : incusEndpoint(settings.incus);
  const incusAddress = endpoint?.address ?? 'injected';
  if (settings.storeFile !== undefined) mkdirSync(dirname(settings.storeFile), { recursive: true, mode: 0o700 });

  const metrics = new EnrichDaemonMetrics(registry);
  const published = new PublishedEventMetrics(registry);
  const restClient =
    overrides.reader === undefined ? new IncusRestClient({ endpoint, readTimeoutMs: settings.readTimeout, logger, registry }) : undefined;
  const reader: IncusReader = overrides.reader ?? (restClient as IncusRestClient);
  const events$ = overrides.events$ ?? incusEvents({ endpoint, logger, registry });

  let stopping = false;
  let publisher: NatsPublisher | undefined;
  let lines: LineWriter | undefined;
  const store =
    settings.storeFile === undefined ? undefined : (hooks: ColdStoreHooks) => fileColdStore(settings.storeFile as string, hooks);
  const enricher: Enricher = createEnricher({
    events$,
    reader,
    config: settings,
    logger,
    registry,
    ...(store !== undefined ? { store } : {}),
    ...(overrides.scheduler !== undefined ? { scheduler: overrides.scheduler } : {}),
  });

  const ready = (): boolean => !stopping && enricher.status().ready && (publisher === undefined || publisher.currentState === 'connected');
  const status = (): EnrichDaemonStatus => ({
    ...enricher.status(),
    ready: ready(),
    incus: incusAddress,
    nats: publisher?.currentState ?? 'off',
    held: publisher?.heldCount ?? 0,
    stopping,
  });

  // The TLS files and .creds are read again at every NATS (re)connection; the watch logs what
  // changed and exports each credential's expiry, the Incus client's and server's certificates too.
  const watch = new CredentialWatch({ credentials: enricherCredentials(settings), logger, registry });
  watch.check();
  const stopWatch = watch.every();
  let monitor: MonitorEndpoint | undefined;
  if (settings.http !== undefined) {
    monitor = await serveMonitorEndpoint({
      port: settings.http.port,
      ...(settings.http.host !== undefined ? { host: settings.http.host } : {}),
      registry,
      ready,
      describe: () => ({ ...status(), ...(watch.problem() !== undefined ? { login: watch.problem() } : {}) }),
      logger,
    });
  }

  if (natsSettings !== undefined) {
    const { servers, name, user, password, token, credentials, tls, maxHeld } = natsSettings;
    publisher = new NatsPublisher({
      open: (signal) =>
        openNatsConnection(
          { servers, name, user, password, token, credentials, ...(tls !== undefined ? { tls } : {}), signal, watch },
          logger,
        ),
      maxHeld,
      logger,
      onResult: (result) => metrics.published.labels('nats', result).inc(),
      onHeld: (held) => metrics.natsHeld.set(held),
    });
    publisher.state$.subscribe((state) => metrics.natsConnected.set(state === 'connected' ? 1 : 0));
  }
  if (settings.outputs.stdout) lines = lineWriter(overrides.stdout ?? process.stdout, logger);

  const prefix = natsSettings?.subjectPrefix ?? '';
  const consumer = overrides.consumer;
  const publish = (event: EnrichedEvent): void => {
    let payload: EventPayload;
    let json: string;
    try {
      payload = toPayload(event);
      json = publisher === undefined && lines === undefined ? '' : JSON.stringify(payload);
    } catch (error) {
      // A bug, not bad input: the event is lost, the daemon is not.
      logger.error(
        { err: error, action: event.action, project: event.project, name: event.name },
        'an enriched event could not be serialised',
      );
      return;
    }
    published.count(event);
    if (consumer !== undefined) {
      try {
        consumer(payload);
      } catch (error) {
        // The consumer's bug: logged, and the other outputs still get the event.
        logger.error(
          { err: error, action: event.action, project: event.project, name: event.name },
          'the in-process consumer failed on an event',
        );
      }
    }
    // Keyed by what the event is about, so an outage past the hold still ends with its latest word.
    if (publisher !== undefined) publisher.publish(subjectFor(prefix, event), json, `${event.project}/${event.kind}/${event.name}`);
    if (lines !== undefined) metrics.published.labels('stdout', lines.write(json) ? 'sent' : 'failed').inc();
  };

  logger.info(
    {
      incus: incusAddress,
      nats: natsSettings?.servers,
      subjectPrefix: natsSettings?.subjectPrefix,
      stdout: settings.outputs.stdout,
      inProcess: consumer !== undefined,
      http: monitor?.port,
      projects: settings.projects,
      instances: settings.instances,
      dataDir: settings.storeFile === undefined ? undefined : dirname(settings.storeFile),
      workers: settings.workers,
    },
    'rxfleet enrich running',
  );

  let resolveDone: (end: DaemonEnd) => void = () => undefined;
  const done = new Promise<DaemonEnd>((resolve) => (resolveDone = resolve));
  let finishing: Promise<void> | undefined;
  // Everything after the enricher has handed on its last event, whichever way it ended.
  const finish = (end: DaemonEnd): Promise<void> => {
    finishing ??= (async () => {
      stopping = true;
      await enricher.stopped;
      await lines?.flush();
      await publisher?.close();
      restClient?.close();
      await monitor?.close();
      stopWatch();
      logger.info({ end }, 'rxfleet enrich stopped');
      resolveDone(end);
    })();
    return finishing;
  };

  const subscription: Subscription = enricher.events$.subscribe({
    next: publish,
    error: (error: unknown) => {
      logger.error({ err: error }, 'the enricher pipeline failed (a bug): stopping');
      void finish('failed');
    },
    complete: () => {
      if (!stopping) logger.error('the Incus event stream ended: stopping');
      void finish(stopping ? 'stopped' : 'stream-ended');
    },
  });

  return {
    port: monitor?.port,
    registry,
    status,
    ready,
    stop() {
      if (!stopping) {
        stopping = true;
        logger.info('stopping: handing on what the enricher holds');
        enricher.drain();
      }
      // The enricher completes its events on drain, which runs `finish` from the subscription.
      return finish('stopped').then(() => subscription.unsubscribe());
    },
    done,
  };
}

/** The enricher's credential files: its NATS TLS files and `.creds`, and the Incus client's and pinned server's certificates. */
function enricherCredentials(settings: EnricherSettings): WatchedCredential[] {
  const list: WatchedCredential[] = [];
  const nats = settings.outputs.nats;
  const isFile = (value: string | undefined): value is string => value !== undefined && !value.includes('-----BEGIN');
  if (isFile(nats?.tls?.cert)) list.push({ kind: 'nats_tls_certificate', file: nats.tls.cert, format: 'certificate' });
  if (isFile(nats?.tls?.ca)) list.push({ kind: 'nats_tls_ca', file: nats.tls.ca, format: 'certificate' });
  if (isFile(nats?.credentials)) list.push({ kind: 'nats_credentials', file: nats.credentials, format: 'creds' });
  const incus = settings.incus;
  if (isFile(incus.clientCert)) list.push({ kind: 'incus_client_certificate', file: incus.clientCert, format: 'certificate' });
  if (isFile(incus.serverCert)) list.push({ kind: 'incus_server_certificate', file: incus.serverCert, format: 'certificate' });
  return list;
}
