import { existsSync } from 'node:fs';
import { createConnection as netConnect, isIP } from 'node:net';
import { join } from 'node:path';
import { Duplex } from 'node:stream';
import { SecureContext, connect as tlsConnect } from 'node:tls';
import { IncusEndpointError, TlsCredentials, certificateFingerprint, tlsCredentials } from './incusTlsCredentials';
import { definedFields } from '../../lib/definedFields';

export { IncusEndpointError, certificateFingerprint, normaliseFingerprint } from './incusTlsCredentials';

/** Where an Incus or LXD server is, and how to prove who we are and who it is. */
export interface IncusEndpointOptions {
  /**
   * A unix socket path (`/var/lib/lxd/unix.socket`), the same as `unix:///path`, or an
   * `https://host[:port]` URL (port 8443 unless given). Absent: {@link defaultIncusSocket}.
   */
  url?: string;
  /** https: the client certificate the server trusts, as a PEM file path or the PEM text. */
  clientCert?: string;
  /** https: its private key, as a PEM file path or the PEM text. Never logged, never in an error. */
  clientKey?: string;
  /** https: the server's certificate to pin, as a PEM file path or the PEM text. */
  serverCert?: string;
  /**
   * https: the SHA-256 fingerprint of the server's certificate to pin, in hex, with or without
   * colons, either case (as `lxc info` or `openssl x509 -noout -fingerprint -sha256` print it).
   */
  serverFingerprint?: string;
  /** How long to wait for the connection (and the TLS handshake). Default 10 s. */
  connectTimeoutMs?: number;
}

/**
 * An endpoint ready to open connections: what the REST client's keep-alive agent and the events
 * websocket both connect through, so the two can never disagree about the server or its pin.
 */
export interface IncusEndpoint {
  readonly kind: 'unix' | 'https';
  /** The socket path or the https origin: safe to log. */
  readonly address: string;
  /** What goes in the `Host` header. */
  readonly host: string;
  /**
   * Opens one connection in the shape Node's `http.Agent#createConnection` (and `ws`'s option of
   * the same name) takes: the socket is handed to `callback` only once it is connected and, for
   * https, once the server's certificate matched the pin, so no byte of a request ever goes to a
   * server that is not the pinned one. Always returns `undefined`.
   */
  createConnection(options: unknown, callback: (error: Error | null, socket?: Duplex) => void): undefined;
}

/** The server's certificate is not the pinned one. */
export class IncusPinError extends Error {
  constructor(
    readonly expected: string,
    readonly presented: string,
  ) {
    super(`the server presented certificate ${presented}, not the pinned ${expected}`);
    this.name = 'IncusPinError';
  }
}

const DEFAULT_SOCKETS = ['/var/lib/incus/unix.socket', '/var/lib/lxd/unix.socket', '/var/snap/lxd/common/lxd/unix.socket'];

/**
 * The local server's socket when none is configured: `$INCUS_SOCKET`, else `$INCUS_DIR` or
 * `$LXD_DIR` + `/unix.socket`, else the first of Incus's, Debian's LXD's and the LXD snap's
 * sockets that exists, else `/var/lib/lxd/unix.socket`.
 */
export function defaultIncusSocket(env: NodeJS.ProcessEnv = process.env, exists: (path: string) => boolean = existsSync): string {
  if (env.INCUS_SOCKET) return env.INCUS_SOCKET;
  if (env.INCUS_DIR) return join(env.INCUS_DIR, 'unix.socket');
  if (env.LXD_DIR) return join(env.LXD_DIR, 'unix.socket');
  return DEFAULT_SOCKETS.find((path) => exists(path)) ?? '/var/lib/lxd/unix.socket';
}

function unixEndpoint(path: string): IncusEndpoint {
  return {
    kind: 'unix',
    address: path,
    host: 'lxd',
    createConnection(_options, callback) {
      const socket = netConnect({ path });
      const failed = (error: Error): void => callback(error);
      socket.once('error', failed);
      socket.once('connect', () => {
        socket.off('error', failed);
        callback(null, socket);
      });
      return undefined;
    },
  };
}

interface TlsSettings {
  host: string;
  port: number;
  credentials: () => TlsCredentials;
  connectTimeoutMs: number;
}

function httpsEndpoint(origin: string, settings: TlsSettings): IncusEndpoint {
  const { host, port, credentials, connectTimeoutMs } = settings;
  return {
    kind: 'https',
    address: origin,
    host: port === 443 ? host : `${host.includes(':') ? `[${host}]` : host}:${port}`,
    createConnection(_options, callback) {
      // Read again if a file changed since the last connection (a renewed certificate or pin).
      let pin: string;
      let context: SecureContext;
      try {
        ({ pin, context } = credentials());
      } catch (error) {
        callback(error as Error);
        return undefined;
      }
      // The chain is not verified: LXD and Incus certificates are self-signed. The pin is the whole
      // check, made before the socket is handed over, so nothing is sent to another server.
      const socket = tlsConnect({
        host,
        port,
        servername: isIP(host) === 0 ? host : undefined,
        secureContext: context,
        rejectUnauthorized: false,
      });
      let settled = false;
      const settle = (error: Error | null): void => {
        if (settled) return;
        settled = true;
        socket.setTimeout(0);
        socket.off('error', settle);
        if (error === null) {
          callback(null, socket);
        } else {
          socket.destroy();
          callback(error);
        }
      };
      socket.setTimeout(connectTimeoutMs, () => settle(new Error(`no TLS connection to ${origin} within ${connectTimeoutMs} ms`)));
      socket.once('error', settle);
      socket.once('secureConnect', () => {
        const presented = socket.getPeerCertificate();
        const fingerprint = presented?.raw === undefined ? '(none)' : certificateFingerprint(presented.raw);
        settle(fingerprint === pin ? null : new IncusPinError(pin, fingerprint));
      });
      return undefined;
    },
  };
}

/**
 * Resolves where the server is and what proves who is who at configuration time: every
 * problem (a URL that is neither a socket nor https, a missing or unreadable file, a certificate
 * that does not parse, a key that does not match its certificate, https without a pin, a pin given
 * twice that disagrees) throws an {@link IncusEndpointError} here, with a message that never
 * includes the key.
 *
 * For https, the server is accepted if and only if its certificate's SHA-256 fingerprint is the
 * pinned one (from `serverFingerprint`, or computed from `serverCert`), whoever signed it. The
 * certificate, key and pinned certificate files are read again at the next connection once one of
 * them changes on disk (`incusTlsCredentials.ts`), so a renewal needs no restart.
 */
export function incusEndpoint(options: IncusEndpointOptions = {}): IncusEndpoint {
  const url = options.url ?? defaultIncusSocket();
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  if (url.startsWith('/') || url.startsWith('.')) return unixEndpoint(url);
  if (url.startsWith('unix:')) {
    const path = url.replace(/^unix:(\/\/)?/, '');
    if (path === '') throw new IncusEndpointError(`${url} names no socket`);
    return unixEndpoint(path);
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new IncusEndpointError(`${url} is neither a unix socket path nor an https URL`);
  }
  if (parsed.protocol !== 'https:')
    throw new IncusEndpointError(`${parsed.protocol}// is not served by Incus or LXD: use https:// or a unix socket path`);
  if (parsed.pathname !== '/' || parsed.search !== '' || parsed.username !== '' || parsed.password !== '') {
    throw new IncusEndpointError(`${parsed.origin}: give only the scheme, host and port`);
  }
  const { clientCert, clientKey, serverCert, serverFingerprint } = options;
  if (clientCert === undefined || clientKey === undefined)
    throw new IncusEndpointError(`${parsed.origin}: https needs clientCert and clientKey`);
  if (serverCert === undefined && serverFingerprint === undefined) {
    throw new IncusEndpointError(`${parsed.origin}: https needs the server certificate pinned (serverCert or serverFingerprint)`);
  }

  const credentials = tlsCredentials({
    clientCert,
    clientKey,
    ...definedFields({ serverCert, serverFingerprint }),
  });

  const host = parsed.hostname.startsWith('[') ? parsed.hostname.slice(1, -1) : parsed.hostname;
  const port = parsed.port === '' ? 8443 : Number(parsed.port);
  const origin = `https://${parsed.host}${parsed.port === '' ? ':8443' : ''}`;
  return httpsEndpoint(origin, { host, port, credentials, connectTimeoutMs });
}

/** An endpoint as given, or resolved from options. */
export function toEndpoint(endpoint: IncusEndpoint | IncusEndpointOptions | undefined): IncusEndpoint {
  return endpoint !== undefined && 'createConnection' in endpoint ? endpoint : incusEndpoint(endpoint);
}
