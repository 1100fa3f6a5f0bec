/**
 * `rxfleet events`, run: where the stream and the bucket are (the enricher's configuration, the
 * flags over it), one connection, then the events (or the fleet's state) printed until the end of
 * what is there, or for ever with `--follow`.
 */
import { readFileSync } from 'node:fs';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { Observable, Subscription, filter } from 'rxjs';
import { parseGoDuration } from '../../lib/duration';
import { EnricherConfigError, parseEnricherConfig } from '../../lib/enricher/config/config';
import { DurableSettings } from '../../lib/enricher/config/durableSettings';
import { fleetKey } from '../../lib/enricher/follow/fleetLedger';
import { EventPayload } from '../../lib/enricher/output/payload';
import { decodeEventPayload } from '../../lib/enricher/output/payloadDecoder';
import { subjectToken } from '../../lib/enricher/output/subject';
import { Logger } from '../../lib/logger';
import { redactUrlCredentials } from '../../lib/redact';
import { createLogger } from '../../streams/logOutput';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { followFleet } from '../../streams/jetstream/followFleet';
import { readStateSnapshot } from '../../streams/jetstream/stateBucket';
import { DeliverPolicy, JsMsg, OrderedConsumerOptions, readToEnd, streamMessages } from '../../streams/jetstream/streamReading';
import { handleShutdownSignals } from '../daemon/shutdownSignals';
import { LogFlags, NatsFlags, logSettings, natsServers } from '../options';
import { readEnricherConfigText } from '../enrich/commandLine';
import { EventsFormat, formatEvent, formatInstance, tableHeader } from './eventsFormat';
import { definedFields } from '../../lib/definedFields';

/** The flags, as commander hands them over. */
export interface EventsOptions extends NatsFlags, LogFlags {
  config?: string;
  stream?: string;
  bucket?: string;
  subjectPrefix?: string;
  since?: string;
  follow?: boolean;
  project?: string;
  name?: string;
  state?: boolean;
  format?: EventsFormat;
  connectTimeout: number;
}

/** A problem that stops the command: one line on stderr, exit 1. */
class EventsError extends Error {
  override name = 'EventsError';
}

interface Source {
  servers: string[];
  user?: string;
  password?: string;
  token?: string;
  credentials?: string;
  tls?: { ca?: string; cert?: string; key?: string };
  stream: string;
  bucket: string;
  subjectPrefix: string;
}

function configured(file: string): DurableSettings {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new EventsError(`${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  const read = readEnricherConfigText(text, file);
  if (read.problems.length > 0) throw new EventsError(read.problems[0]);
  try {
    const { settings } = parseEnricherConfig(read.raw);
    return {
      problems: [],
      ...definedFields({ jetstream: settings.outputs.jetstream, state: settings.outputs.state }),
    };
  } catch (error) {
    if (error instanceof EnricherConfigError) throw new EventsError(`${file}: ${error.problems[0]}`);
    throw error;
  }
}

function source(options: EventsOptions): Source {
  const file = options.config === undefined ? undefined : configured(options.config);
  const js = file?.jetstream;
  const flags = natsServers(options);
  const servers = flags.servers.length > 0 ? flags.servers : (js?.servers ?? []);
  if (servers.length === 0)
    throw new EventsError('no NATS server: give --nats URL (or RXFLEET_NATS_URL), or --config with outputs.jetstream');
  const fromFlags = flags.servers.length > 0;
  const tls =
    options.natsCa !== undefined || options.natsCert !== undefined || options.natsKey !== undefined
      ? { ca: options.natsCa, cert: options.natsCert, key: options.natsKey }
      : fromFlags
        ? undefined
        : js?.tls;
  const user = flags.user ?? (fromFlags ? undefined : js?.user);
  const password = flags.password ?? (fromFlags ? undefined : js?.password);
  const token = options.natsToken ?? (fromFlags ? undefined : js?.token);
  const credentials = options.natsCreds ?? (fromFlags ? undefined : js?.credentials);
  return {
    servers,
    ...definedFields({ user, password, token, credentials, tls }),
    stream: options.stream ?? js?.stream ?? 'INCUS_EVENTS',
    bucket: options.bucket ?? file?.state?.bucket ?? 'INCUS_STATE',
    subjectPrefix: options.subjectPrefix ?? js?.subjectPrefix ?? 'incus.events',
  };
}

/** Fails with one line when `stream` is not on the server (the bucket's stream for `--state`). */
async function mustExist(nc: NatsConnection, stream: string, what: string): Promise<void> {
  try {
    await (await jetstreamManager(nc)).streams.info(stream);
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)
      throw new EventsError(`no ${what} on the server`);
    throw error;
  }
}

/** `--since` as a start time. */
function startTime(since: string, now = Date.now()): string {
  try {
    return new Date(now - parseGoDuration(since)).toISOString();
  } catch {
    const at = Date.parse(since);
    if (Number.isNaN(at))
      throw new EventsError(`--since: expected a duration such as 10m or a time such as 2026-12-01T08:00:00Z, got "${since}"`);
    return new Date(at).toISOString();
  }
}

/** Runs `rxfleet events`; resolves with the exit code. */
export async function runEvents(options: EventsOptions): Promise<number> {
  const { level, format: logFormat } = logSettings(options, 'warn');
  const logger = createLogger({
    level,
    ...definedFields({ format: logFormat }),
    destination: 'stderr',
    name: 'rxfleet-events',
  });
  const following = new Following();
  const removeSignals = handleShutdownSignals({ graceful: async () => following.end(), logger, graceMs: 5000 });
  const timer = setTimeout(() => following.abandon.abort(), options.connectTimeout);
  let connection: FleetConnection | undefined;
  try {
    const where = source(options);
    const since = options.since === undefined ? undefined : startTime(options.since);
    // Each failed attempt is a warning in a daemon; here the one line at the end says it.
    const quiet = logger.child({}, { level: logger.isLevelEnabled('debug') ? 'debug' : 'error' });
    const { signal } = following.abandon;
    connection = await openNatsConnection({ ...where, name: 'rxfleet-events', signal }, quiet).catch((error: unknown) => {
      if (signal.aborted) throw new EventsError(`cannot reach NATS at ${where.servers.join(',')} within ${options.connectTimeout} ms`);
      throw error;
    });
    clearTimeout(timer);
    const out: Printing = {
      format: options.format ?? (process.stdout.isTTY === true ? 'table' : 'json'),
      print: (line) => process.stdout.write(`${line}\n`),
      wanted: (p) =>
        (options.project === undefined || p.project === options.project) &&
        (options.name === undefined || p.name === options.name || p.old_name === options.name),
      following,
    };
    if (options.state === true) return await showState(connection.nc, where, options.follow === true, out);
    return await showEvents(connection.nc, where, { ...options, since }, out, logger);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${redactUrlCredentials(`rxfleet events: ${message}`)}\n`);
    return 1;
  } finally {
    clearTimeout(timer);
    following.stop();
    await connection?.drain().catch(() => undefined);
    removeSignals();
  }
}

/**
 * What `--follow` follows, until a signal ends it (waiting for NATS stops too) or the stream or
 * bucket errors: then the error is the command's one line.
 */
class Following {
  /** Aborted by a signal, or when NATS is not reached in time. */
  readonly abandon = new AbortController();
  private subscription: Subscription | undefined;
  private failed: string | undefined;
  private done: () => void = () => undefined;
  private readonly finished = new Promise<void>((resolve) => (this.done = resolve));

  /** A signal: stop waiting for NATS, stop following. */
  end(): void {
    this.abandon.abort();
    this.subscription?.unsubscribe();
    this.done();
  }

  /** Follows `source` until a signal or its error ends it. */
  async follow<T>(source: Observable<T>, next: (value: T) => void): Promise<void> {
    this.subscription = source.subscribe({
      next,
      error: (error: unknown) => {
        this.failed = (error as Error).message;
        this.done();
      },
    });
    await this.finished;
    if (this.failed !== undefined) throw new EventsError(this.failed);
  }

  stop(): void {
    this.subscription?.unsubscribe();
  }
}

/** How the command prints: the format, each line, the filter of `--project` and `--name`, and what `--follow` follows. */
interface Printing {
  readonly format: EventsFormat;
  readonly print: (line: string) => boolean;
  readonly wanted: (payload: EventPayload) => boolean;
  readonly following: Following;
}

/** `--state`: the fleet as the bucket holds it, sorted; with `--follow`, then every event after it. */
async function showState(nc: NatsConnection, where: Source, follow: boolean, out: Printing): Promise<number> {
  const { format, print, wanted } = out;
  await mustExist(nc, `KV_${where.bucket}`, `state bucket ${where.bucket}`);
  if (follow) await mustExist(nc, where.stream, `stream ${where.stream}`);
  if (format === 'table') print(tableHeader('state'));
  const printState = (instances: Iterable<{ project: string; name: string; seq: number; event: EventPayload }>): void => {
    const sorted = [...instances]
      .filter((i) => wanted(i.event))
      .sort((a, b) => fleetKey(a.project, a.name).localeCompare(fleetKey(b.project, b.name)));
    for (const i of sorted) print(formatInstance(i.event, i.seq, format));
  };
  if (!follow) {
    printState((await readStateSnapshot(nc, where.bucket)).instances);
    return 0;
  }
  await out.following.follow(
    followFleet({ nc, stream: where.stream, bucket: where.bucket, subjectPrefix: where.subjectPrefix }),
    (update) => {
      if (update.kind === 'state') {
        printState(update.instances.values());
        if (format === 'table') print(tableHeader('events'));
      } else if (wanted(update.event)) print(formatEvent(update.event, format));
    },
  );
  return 0;
}

/**
 * The events in the stream (those of `--project` and `--name`, from `--since`) to its end; with
 * `--follow`, and every one after. A message that is not an enriched event is a warning, skipped.
 */
async function showEvents(
  nc: NatsConnection,
  where: Source,
  options: Pick<EventsOptions, 'project' | 'name' | 'follow'> & { since: string | undefined },
  out: Printing,
  logger: Logger,
): Promise<number> {
  const { format, print } = out;
  const { since } = options;
  await mustExist(nc, where.stream, `stream ${where.stream}`);
  const subject = `${where.subjectPrefix}.${options.project === undefined ? '*' : subjectToken(options.project)}.*.*.${options.name === undefined ? '*' : subjectToken(options.name)}`;
  const start: Partial<OrderedConsumerOptions> =
    since === undefined ? { deliver_policy: DeliverPolicy.All } : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since };
  if (format === 'table') print(tableHeader('events'));
  const show = (m: JsMsg): void => {
    const decoded = decodeEventPayload(m.data);
    if (!decoded.ok) logger.warn({ streamSeq: m.seq, reason: decoded.reason }, 'a message in the stream is not an enriched event: skipped');
    else print(formatEvent(decoded.value, format));
  };
  if (options.follow !== true) {
    await readToEnd(nc, where.stream, { filter_subjects: subject, ...start }, show);
    return 0;
  }
  const { abandon } = out.following;
  await out.following.follow(
    streamMessages(nc, where.stream, { filter_subjects: subject, ...start }).pipe(filter(() => !abandon.signal.aborted)),
    show,
  );
  return 0;
}
