import { readFileSync } from 'node:fs';
import { NatsConnection, NodeConnectionOptions, connect, credsAuthenticator } from '@nats-io/transport-node';
import { definedFields } from '../lib/definedFields';

/** Where a command-line tool connects and as whom (the `--nats` options). */
export interface ToolConnectionConfig {
  servers: string[];
  name: string;
  user?: string;
  password?: string;
  token?: string;
  /** A `.creds` file (user JWT and nkey seed). */
  credentials?: string;
  tls?: { ca?: string; cert?: string; key?: string };
  /** The whole attempt. Default 5 s. */
  timeoutMs?: number;
}

/**
 * One connection for a command that asks and exits (`rxfleet status`, `history`): a single
 * attempt over the servers given, no reconnecting, so an unreachable or refusing broker is one
 * clear error at once rather than a daemon's patient retries. Files are read when it connects.
 * Its requests' errors carry no stack of where they were asked (`noAsyncTraces`).
 */
export async function connectTool(config: ToolConnectionConfig): Promise<NatsConnection> {
  const { timeoutMs = 5000 } = config;
  const options: NodeConnectionOptions = {
    // Bare host:port or a URL, as the daemons take them (natsConnection.ts's rule; that module is not loaded for a tool).
    servers: config.servers.map((s) => (/^[a-z]+:\/\//i.test(s.trim()) ? s.trim() : `nats://${s.trim()}`)),
    name: config.name,
    timeout: timeoutMs,
    reconnect: false,
    maxReconnectAttempts: 0,
    // Otherwise a stack is captured at every request, for a timeout's error to show where it was
    // asked: a tool prints only the error's message, and the captures cost `status` about a millisecond.
    noAsyncTraces: true,
    ...definedFields({ user: config.user, pass: config.password, token: config.token }),
  };
  if (config.credentials !== undefined) options.authenticator = credsAuthenticator(readFileSync(config.credentials));
  const tls = config.tls;
  if (tls !== undefined && (tls.ca !== undefined || tls.cert !== undefined || tls.key !== undefined)) {
    options.tls = {
      ...(tls.ca !== undefined ? { ca: readFileSync(tls.ca, 'utf8') } : {}),
      ...(tls.cert !== undefined ? { cert: readFileSync(tls.cert, 'utf8') } : {}),
      ...(tls.key !== undefined ? { key: readFileSync(tls.key, 'utf8') } : {}),
    };
  }
  return connect(options);
}
