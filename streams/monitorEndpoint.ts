import { Server, createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { Logger, silentLogger } from '../lib/logger';

/** What the endpoint serves. */
export interface MonitorEndpointConfig {
  /** 0 picks a free port (tests); the daemon passes its configured port. */
  port: number;
  /** Default all interfaces, as the Go provisioner. */
  host?: string;
  /** The daemon's own registry (never prom-client's global one). */
  registry: Registry;
  /** `/ready` answers 200 while this is true, 503 otherwise. */
  ready?: () => boolean;
  /** Extra facts for `/health` and `/ready` bodies (connection state, warmth...). */
  describe?: () => Record<string, unknown>;
  logger?: Logger;
}

/** A running endpoint. */
export interface MonitorEndpoint {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves `/metrics` (Prometheus text exposition of `registry`), `/health` (200 while the process
 * is up) and `/ready` (200 when `ready()` says so, else 503). Anything else is a 404.
 */
export async function serveMonitorEndpoint(config: MonitorEndpointConfig): Promise<MonitorEndpoint> {
  const { registry, ready = () => true, describe = () => ({}), logger = silentLogger } = config;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (error: unknown) => {
          logger.error({ err: error }, 'collecting metrics failed');
          res.writeHead(500).end();
        },
      );
      return;
    }
    if (path === '/health' || path === '/ready') {
      const ok = path === '/health' || ready();
      res
        .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: ok ? 'ok' : 'not ready', ...describe() }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, 'serving /metrics, /health and /ready');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
