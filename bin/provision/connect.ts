import { Registry } from 'prom-client';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ConnectorMetrics } from '../../lib/choria/connectorMetrics';
import { Logger } from '../../lib/logger';
import { ConfigurationError, ProvisionerConfig } from '../../lib/provision/config';
import { ConnectionPlan, connectionPlan } from '../../streams/choria/connectionPlan';
import { resolveBrokers } from '../../streams/choria/srvLookup';
import { CredentialWatch } from '../../streams/credentialWatch';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';

/** The broker connection a provisioner opened, and what it was opened with. */
export interface BrokerConnection {
  connection: FleetConnection;
  plan: ConnectionPlan;
  /** Present when the daemon opened the connection: its credentials, watched. */
  watch?: CredentialWatch;
  /** Stops watching the credentials and, when the daemon opened it, drains the connection. */
  close(): Promise<void>;
}

/** One line for the first hour after a switch: which provider, which name, what TLS, which protocol. */
function securityLine(plan: ConnectionPlan): [object, string] {
  const security = plan.security;
  const requests =
    plan.protocol.version === 'v2'
      ? 'v2, signed with the seed'
      : plan.protocol.signer !== undefined
        ? 'v1, signed with the x509 key'
        : 'v1, unsigned';
  const tls =
    security?.tls === undefined
      ? 'off'
      : !security.tls.verify
        ? 'encrypted, not verified'
        : security.tls.cert !== undefined
          ? 'mutual, verified'
          : 'verified';
  const replies = plan.fips.on ? `, replies under sha256 of the caller (FIPS 140 mode: ${plan.fips.reason})` : '';
  return [
    { provider: security?.provider, certname: security?.certname, callerId: plan.callerId, tls, requests, fips: plan.fips.on },
    `security provider ${security?.provider ?? 'unknown'}: caller ${plan.callerId}, TLS ${tls}, requests ${requests}${replies}`,
  ];
}

/**
 * Connects the provisioner to its brokers as go-choria's client does: the connection plan from the
 * Choria configuration (an error in it throws a {@link ConfigurationError} before any dialling),
 * brokers from the list or SRV records, and every credential (TLS files, JWT, seed, `.creds`)
 * read again at each (re)connection, SRV looked up again on each disconnect. With `given` (the
 * demo's transport, tests sharing a server) only the plan is made: the caller owns that connection.
 */
export async function connectToBrokers(
  config: ProvisionerConfig,
  choria: ChoriaClientConfig,
  parts: { logger: Logger; registry: Registry; given?: FleetConnection | undefined },
): Promise<BrokerConnection> {
  const { logger, registry, given } = parts;
  const plan = connectionPlan(config, choria);
  // go-choria's connector series exist from the start, also over a connection the caller owns.
  const connectorMetrics = new ConnectorMetrics(registry);
  if (given !== undefined) return { connection: given, plan, close: async () => undefined };
  if (plan.problems.some((p) => p.severity === 'error')) throw new ConfigurationError(plan.problems);
  logger.info(...securityLine(plan));
  const lookUp = () => resolveBrokers(plan.brokers, { logger, dnsServers: config.rxfleet.dnsServers });
  const brokers = await lookUp();
  // The watch logs what changed and exports every credential's expiry.
  const watch = new CredentialWatch({ credentials: plan.credentials, logger, registry });
  const stopWatch = watch.every();
  try {
    const connection = await openNatsConnection(
      {
        ...plan.nats,
        servers: brokers.servers,
        watch,
        events: connectorMetrics,
        resolveServers: plan.brokers.kind === 'srv' ? async () => (await lookUp()).servers : undefined,
      },
      logger,
    );
    return {
      connection,
      plan,
      watch,
      close: async () => {
        stopWatch();
        await connection.drain();
      },
    };
  } catch (error) {
    stopWatch();
    throw error;
  }
}
