import { readFileSync } from 'node:fs';
import { NatsConnection, NodeConnectionOptions as ConnectionOptions, connect, credsAuthenticator } from '@nats-io/transport-node';
import { BehaviorSubject, Observable, distinctUntilChanged } from 'rxjs';
import { Logger, silentLogger } from '../lib/logger';
import { ChoriaJwtLogin, choriaJwtAuthenticator } from './choria/brokerLogin';
import { LoginBackoff } from './natsLoginBackoff';

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
   * anonymous TLS, the `choria` provider without a CA); default true.
   */
  tls?: { ca?: string; cert?: string; key?: string; verify?: boolean };
  /** A Choria organisation-issuer login: the client JWT as token, the server's nonce signed with its seed. */
  jwtLogin?: ChoriaJwtLogin;
  /**
   * Prefix of reply inboxes. A restricted account (Choria's provisioning account may only publish
   * and subscribe under `provisioning.reply.>`) needs it; default nats.js's `_INBOX`.
   */
  inboxPrefix?: string;
  /** Client ping interval. Default 10 s, so a dead server is noticed in ~30 s, not 4 minutes. */
  pingIntervalMs?: number;
  /**
   * Gives up waiting for the first connection: {@link openNatsConnection} rejects at its next
   * attempt (within about `reconnectTimeWait`) instead of retrying for ever, so a daemon stopped
   * before NATS was ever reachable leaves no dial loop behind.
   */
  signal?: AbortSignal;
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
    // A daemon retries for ever and waits for the first connection too: nats.js's defaults (10
    // attempts, fail if the first connect fails) would end the process on a broker restart.
    maxReconnectAttempts: -1,
    waitOnFirstConnect: true,
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
  const authenticators = [
    backoff.observer,
    ...(config.credentials !== undefined ? [credsAuthenticator(readFileSync(config.credentials))] : []),
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
    const { ca, cert, key, verify = true } = config.tls;
    options.tls = {
      ...(verify ? {} : { rejectUnauthorized: false }),
      ...(ca !== undefined ? { ca: readFileSync(ca, 'utf8') } : {}),
      ...(cert !== undefined ? { cert: readFileSync(cert, 'utf8') } : {}),
      ...(key !== undefined ? { key: readFileSync(key, 'utf8') } : {}),
    };
  }
  return options;
}

/**
 * Opens the daemon's one NATS connection with daemon-grade reconnect settings (retry for ever,
 * wait on the first connect, short pings), and resolves once connected. Credentials never reach
 * the log: only the servers and the name are logged.
 */
export async function openNatsConnection(config: NatsConnectionConfig, logger: Logger = silentLogger): Promise<FleetConnection> {
  const backoff = new LoginBackoff();
  const options = daemonConnectionOptions(config, backoff);
  logger.info({ servers: options.servers, name: options.name }, 'connecting to NATS');
  const nc = await connect(options);
  backoff.follow(nc);
  const state = new BehaviorSubject<ConnectionState>('connected');
  logger.info({ server: nc.getServer() }, 'connected to NATS');

  // The status iterator is read in a loop rather than turned into an Observable with from():
  // nothing subscribes to it but this loop, and it ends when the connection closes.
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        logger.warn({ server: status.server }, 'disconnected from NATS');
        state.next('disconnected');
      } else if (status.type === 'reconnect') {
        logger.info({ server: status.server }, 'reconnected to NATS');
        state.next('connected');
      }
    }
  })();
  void nc.closed().then((error: Error | void) => {
    if (error) logger.error({ err: error }, 'NATS connection closed with an error');
    state.next('closed');
    state.complete();
  });

  return fleetConnectionOf(nc, state);
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
