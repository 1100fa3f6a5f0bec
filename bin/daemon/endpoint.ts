import { Registry } from 'prom-client';
import { Logger } from '../../lib/logger';
import { MonitorEndpoint, serveMonitorEndpoint } from '../../streams/monitorEndpoint';
import { definedFields } from '../../lib/definedFields';

/** What {@link serveDaemonEndpoint} serves. */
export interface DaemonEndpointOptions {
  /** Where to listen; port 0 picks a free one. */
  address: { host?: string | undefined; port: number };
  registry: Registry;
  ready(): boolean;
  status(): object;
  /** Why a login is refused, when a credential is why (`CredentialWatch.problem`): `/health`'s `login` field. */
  login?: () => string | undefined;
  logger: Logger;
}

/**
 * A daemon's monitor endpoint: `/metrics` from its registry, `/ready` from `ready()`, and `/health`
 * describing its status and, when a credential is why a login fails, `login`. Resolves once it
 * listens; rejects (EADDRINUSE, EACCES) when it cannot.
 */
export function serveDaemonEndpoint(options: DaemonEndpointOptions): Promise<MonitorEndpoint> {
  const { address, registry, ready, status, logger } = options;
  return serveMonitorEndpoint({
    port: address.port,
    host: address.host,
    registry,
    ready,
    describe: () => {
      const login = options.login?.();
      return { ...(status() as Record<string, unknown>), ...definedFields({ login }) };
    },
    logger,
  });
}
