import { readFileSync } from 'node:fs';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';
import {
  Authenticator,
  NatsConnection,
  NodeConnectionOptions as ConnectionOptions,
  connect,
  credsAuthenticator,
} from '@nats-io/transport-node';
import { BehaviorSubject, Observable, distinctUntilChanged } from 'rxjs';
import { LogBackoff } from '../lib/logBackoff';
import { formatGoDuration } from '../lib/duration';
import { Logger, silentLogger } from '../lib/logger';
import { ChoriaJwtLogin, choriaJwtAuthenticator } from './choria/brokerLogin';
import { redactUrlCredentials } from '../lib/redact';
import { LoginBackoff } from './natsLoginBackoff';
import { ConnectionWatch, isRefusal } from './credentialWatch';
import type { ConnectorEvents } from '../lib/choria/connectorMetrics';
import type { EngineKey } from './choria/pkcs11Engine';
import { definedFields } from '../lib/definedFields';

/** Where to connect and as whom. */
export interface NatsConnectionConfig {
  /** `nats://host:port` or `host:port`, one or more. */
  servers: string[];
  /** The connection name the server shows (Choria names it after the identity). */
  name?: string;
  user?: string;
  password?: string;
  token?: string;
  /** A NATS `.creds` file (user JWT and nkey seed), read when connecting. */
  credentials?: string;
  /**
   * TLS client material (file paths). With only `ca`, the server is verified but no client cert is
   * sent. `verify: false` encrypts without verifying the server's certificate (go-choria's
   * anonymous TLS, the `choria` provider without a CA); default true. A key held by an OpenSSL
   * engine (a PKCS#11 token) is `engineKey`, with its certificate as `certificatePem`.
   */
  tls?: { ca?: string; cert?: string; key?: string; verify?: boolean; certificatePem?: string; engineKey?: EngineKey };
  /** A Choria organisation-issuer login: the client JWT as token, the server's nonce signed with its seed. */
  jwtLogin?: ChoriaJwtLogin;
  /**
   * Prefix of reply inboxes. A restricted account (Choria's provisioning account may only publish
   * and subscribe under `provisioning.reply.>`) needs it; default nats.js's `_INBOX`.
   */
  inboxPrefix?: string;
  /** How long one attempt may take to connect (TCP, TLS, login): go-choria's `plugin.choria.network.connect_timeout`. Default nats.js's 20 s. */
  timeoutMs?: number;
  /** Client ping interval. Default 10 s, so a dead server is noticed in ~30 s, not 4 minutes. */
  pingIntervalMs?: number;
  /**
   * Gives up waiting for the first connection: {@link openNatsConnection} rejects at once (or when
   * the attempt under way ends) instead of retrying for ever, so a daemon stopped before NATS was
   * ever reachable leaves no dial loop behind.
   */
  signal?: AbortSignal;
  /**
   * Between attempts to connect, and to reconnect, while the broker cannot be reached: this, plus
   * up to as much again. Default 250 ms. A refused login waits longer ({@link LoginBackoff}).
   */
  reconnectWaitMs?: number;
  /**
   * Told of every attempt, refusal and connection, so the credential files are read again and a
   * refusal can be explained (`CredentialWatch`).
   */
  watch?: ConnectionWatch;
  /**
   * Where the brokers are now (DNS SRV records, looked up again): asked before every attempt at the
   * first connection and at every disconnection, as go-choria resolves them for every connection.
   */
  resolveServers?: () => Promise<string[]>;
  /** Told what go-choria's connector counts (`choria_connector_*`): failed first attempts, reconnections, errors. */
  events?: ConnectorEvents;
}

/** The state a daemon reports (and `/ready` reads). */
export type ConnectionState = 'connected' | 'disconnected' | 'closed';

/** One NATS connection per daemon, with its state as an observable. */
export interface FleetConnection {
  readonly nc: NatsConnection;
  /** `connected` on subscription once connected, then every change. Completes when closed. */
  readonly state$: Observable<ConnectionState>;
  /** The current state. */
  readonly state: ConnectionState;
  /** Drains subscriptions and pending publishes, then closes. Idempotent. */
  drain(): Promise<void>;
}

/** nats.js wants bare `host:port` or a URL; Choria configs give either. */
export function normaliseServer(server: string): string {
  const trimmed = server.trim();
  return /^[a-z]+:\/\//i.test(trimmed) ? trimmed : `nats://${trimmed}`;
}

/**
 * The connection options a daemon needs (exported so tests can assert them): retry for ever, on the
 * first connection too and when the broker refuses the login, waiting as `backoff` says between
 * attempts (a quarter to half a second while the broker is unreachable, growing to 30 s while it
 * refuses the login).
 */
export function daemonConnectionOptions(config: NatsConnectionConfig, backoff: LoginBackoff = new LoginBackoff()): ConnectionOptions {
  const options: ConnectionOptions = {
    servers: config.servers.map(normaliseServer),
    name: config.name,
    // A daemon retries for ever: nats.js's default (10 attempts) would end the process on a broker
    // restart. The first connection is retried by openNatsConnection itself, which logs why each
    // attempt failed (nats.js's own wait on the first connect says nothing).
    maxReconnectAttempts: -1,
    waitOnFirstConnect: false,
    // A broker that refuses the login twice must not end the daemon: go-choria's connector keeps
    // trying (nats.go's IgnoreAuthErrorAbort), so a fixed token or password is picked up in time.
    // Both daemons behave so; the waits grow while the login is refused (LoginBackoff).
    ignoreAuthErrorAbort: true,
    reconnectDelayHandler: backoff.delay,
    pingInterval: config.pingIntervalMs ?? 10_000,
    maxPingOut: 3,
  };
  if (config.user !== undefined) options.user = config.user;
  if (config.password !== undefined) options.pass = config.password;
  if (config.token !== undefined) options.token = config.token;
  if (config.inboxPrefix !== undefined) options.inboxPrefix = config.inboxPrefix;
  if (config.timeoutMs !== undefined) options.timeout = config.timeoutMs;
  const authenticators = [
    backoff.observer,
    ...(config.credentials !== undefined ? [rereadCredsAuthenticator(config.credentials)] : []),
    ...(config.jwtLogin !== undefined ? [choriaJwtAuthenticator(config.jwtLogin)] : []),
  ];
  options.authenticator = authenticators;
  const { signal } = config;
  if (signal !== undefined) {
    // nats.js asks this before every attempt; throwing ends its dial loop (null keeps its own pick).
    options.reconnectToServer = () => {
      if (signal.aborted) throw new Error('connecting to NATS was abandoned');
      return null;
    };
  }
  if (config.tls !== undefined) {
    const { ca, cert, key, verify = true, certificatePem, engineKey } = config.tls;
    // File names, not their content: nats.js reads them at every TLS handshake, so a certificate,
    // key or CA renewed on disk is used from the next (re)connection on, as go-choria reads them.
    // nats.js hands every other option to tls.connect as it is: the engine's key among them.
    const tlsOptions: NonNullable<ConnectionOptions['tls']> & Pick<TlsConnectionOptions, 'privateKeyEngine' | 'privateKeyIdentifier'> = {
      ...(verify ? {} : { rejectUnauthorized: false }),
      ...definedFields({ caFile: ca, certFile: cert, keyFile: key, cert: certificatePem }),
      ...(engineKey !== undefined ? { privateKeyEngine: engineKey.engine, privateKeyIdentifier: engineKey.identifier } : {}),
    };
    options.tls = tlsOptions;
  }
  return options;
}

/**
 * A `.creds` login that reads the file at every CONNECT, so a renewed user JWT is sent at the next
 * reconnection. Read once here, so a missing file fails at start; later a file that cannot be read
 * keeps the last one read (nats.js closes the connection for good when an authenticator throws).
 */
function rereadCredsAuthenticator(file: string): Authenticator {
  let last = readFileSync(file);
  return (nonce?: string) => {
    try {
      last = readFileSync(file);
    } catch {
      // The last good content; the credential watch says the file cannot be read.
    }
    return credsAuthenticator(last)(nonce);
  };
}

/** Why a connection attempt failed, in one line: the socket's own error when nats.js wraps one. */
function failureReason(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  const inner = cause instanceof Error ? cause.message : undefined;
  const outer = error instanceof Error ? error.message : String(error);
  return redactUrlCredentials(inner !== undefined && inner !== outer ? inner : outer);
}

const seconds = (ms: number): string => formatGoDuration(Math.round(ms));

function abandoned(): Error {
  return new Error('connecting to NATS was abandoned');
}

/** Waits `ms`, or rejects at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(abandoned());
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abandoned());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Opens the daemon's one NATS connection with daemon-grade reconnect settings (retry for ever,
 * short pings), and resolves once connected. Until the first connection, every failed attempt is
 * logged at warn with the servers, the reason and when the next comes, the lines thinning out as
 * the outage goes on ({@link LogBackoff}); then `connected to NATS`. Afterwards the connection's
 * life is logged too: `disconnected from NATS` (warn), the failed reconnect attempts (warn, thinned
 * the same way; nats.js does not say why one failed), `reconnected to NATS`. Credentials never
 * reach the log: the servers are logged without their user information.
 */
export async function openNatsConnection(
  config: NatsConnectionConfig,
  logger: Logger = silentLogger,
  backoff: LoginBackoff = new LoginBackoff(config.reconnectWaitMs !== undefined ? { baseMs: config.reconnectWaitMs } : {}),
): Promise<FleetConnection> {
  const options = daemonConnectionOptions(config, backoff);
  const brokers = new Brokers(options, config.resolveServers, logger);
  logger.info({ servers: brokers.logged, connection: options.name }, 'connecting to NATS');
  const { watch } = config;

  const lines = new LogBackoff();
  const { events } = config;
  const startedAt = Date.now();
  const aborted = (): boolean => config.signal?.aborted === true;
  let nc: NatsConnection | undefined;
  for (let attempt = 1; nc === undefined; attempt++) {
    if (aborted()) throw abandoned();
    if (attempt > 1) await brokers.lookUp();
    watch?.attempt();
    try {
      nc = await connect(options);
    } catch (error) {
      if (aborted()) throw abandoned();
      events?.initialAttemptFailed();
      const reason = failureReason(error);
      if (isRefusal(reason)) watch?.refused(reason);
      // The same wait as between reconnects: short while unreachable, growing while refused.
      const retryInMs = backoff.delay();
      const { log, quiet } = lines.next(Date.now());
      if (log) {
        const since = quiet > 0 ? ` (${quiet + 1} failed since the last line)` : '';
        const servers = brokers.logged;
        logger.warn(
          { servers, attempt, reason, retryInMs },
          `cannot connect to NATS at ${servers.join(',')}: ${reason}; attempt ${attempt}${since}, next try in ${seconds(retryInMs)}`,
        );
      }
      await pause(retryInMs, config.signal);
    }
  }
  const connected = nc;
  backoff.follow(connected);
  const state = new BehaviorSubject<ConnectionState>('connected');
  watch?.connected();
  events?.initiallyConnected((Date.now() - startedAt) / 1000);
  logger.info({ server: connected.getServer() }, 'connected to NATS');

  void followStatus(connected, { brokers, state, backoff, logger, watch, events });
  void connected.closed().then((error: Error | void) => {
    events?.closed();
    if (error) logger.error({ err: error }, 'NATS connection closed with an error');
    state.next('closed');
    state.complete();
  });

  return fleetConnectionOf(connected, state);
}

/**
 * The brokers a connection is given, and how they are logged (without their user information).
 * With `resolve` (DNS SRV records), {@link lookUp} asks again: a changed list is logged and used
 * from the next attempt.
 */
class Brokers {
  /** The brokers as the log shows them. */
  logged: string[];

  constructor(
    private readonly options: ConnectionOptions,
    private readonly resolve: (() => Promise<string[]>) | undefined,
    private readonly logger: Logger,
  ) {
    this.logged = (options.servers as string[]).map(redactUrlCredentials);
  }

  /** The brokers looked up again, when they changed (then the connection options have them too). */
  async lookUp(): Promise<string[] | undefined> {
    if (this.resolve === undefined) return undefined;
    const found = (await this.resolve().catch(() => [] as string[])).map(normaliseServer);
    if (found.length === 0 || found.join(',') === (this.options.servers as string[]).join(',')) return undefined;
    this.options.servers = found;
    this.logged = found.map(redactUrlCredentials);
    this.logger.info({ servers: this.logged }, `the brokers changed: now ${this.logged.join(',')}`);
    return found;
  }
}

/** What {@link followStatus} tells of a connection's life. */
interface ConnectionLife {
  brokers: Brokers;
  /** Follows the connection: `disconnected` and `connected` again. */
  state: BehaviorSubject<ConnectionState>;
  /** Says how long nats.js waits before the next reconnect attempt, for the log. */
  backoff: LoginBackoff;
  logger: Logger;
  watch: ConnectionWatch | undefined;
  events: ConnectorEvents | undefined;
}

/**
 * The connection's life after the first connection, as nats.js reports it: disconnections (the
 * brokers looked up again), failed reconnect attempts (logged, thinned as the outage goes on),
 * reconnections, stale pings and errors. The status iterator is read in a loop rather than turned
 * into an Observable with from(): nothing subscribes to it but this loop, and it ends when the
 * connection closes.
 */
async function followStatus(connected: NatsConnection, life: ConnectionLife): Promise<void> {
  const { brokers, state, backoff, logger, watch, events } = life;
  const reconnects = new LogBackoff();
  let attempts = 0;
  let downSince = 0;
  for await (const status of connected.status()) {
    if (status.type === 'disconnect') {
      attempts = 0;
      downSince = Date.now();
      reconnects.reset();
      logger.warn({ server: status.server }, `disconnected from NATS (${status.server}): reconnecting`);
      state.next('disconnected');
      watch?.disconnected?.();
      void brokers.lookUp().then((found) => {
        if (found !== undefined && !connected.isClosed()) connected.setServers(found);
      });
    } else if (status.type === 'reconnecting') {
      // Each one starts an attempt: the one before it, if any, has failed.
      watch?.attempt();
      if (attempts > 0) {
        const { log, quiet } = reconnects.next(Date.now());
        if (log) {
          const since = quiet > 0 ? ` (${quiet + 1} failed since the last line)` : '';
          const servers = brokers.logged;
          logger.warn(
            { servers, attempt: attempts, downForMs: Date.now() - downSince },
            `cannot reconnect to NATS at ${servers.join(',')}: attempt ${attempts} failed${since}, next try within ${seconds(backoff.ceilingMs())}`,
          );
        }
      }
      attempts++;
    } else if (status.type === 'reconnect') {
      logger.info(
        { server: status.server, attempts, downForMs: Date.now() - downSince },
        `reconnected to NATS (${status.server}) after ${seconds(Date.now() - downSince)}`,
      );
      watch?.connected();
      events?.reconnected();
      state.next('connected');
    } else if (status.type === 'staleConnection') {
      logger.warn('the NATS server stopped answering pings: reconnecting');
    } else if (status.type === 'error') {
      events?.error();
      if (isRefusal(failureReason(status.error))) watch?.refused(failureReason(status.error));
      logger.warn({ err: status.error }, `NATS error: ${failureReason(status.error)}`);
    }
  }
}

/**
 * A {@link FleetConnection} over a connection whose state `state` follows: `state$` without
 * repeats, and a `drain()` that drains once (closing if the drain fails) however often it is called.
 */
export function fleetConnectionOf(nc: NatsConnection, state: BehaviorSubject<ConnectionState>): FleetConnection {
  let draining: Promise<void> | undefined;
  return {
    nc,
    state$: state.pipe(distinctUntilChanged()),
    get state() {
      return state.value;
    },
    drain() {
      if (draining === undefined) draining = nc.isClosed() ? Promise.resolve() : nc.drain().catch(() => nc.close());
      return draining;
    },
  };
}
