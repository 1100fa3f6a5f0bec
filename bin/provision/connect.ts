import { Registry } from 'prom-client';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ConnectorMetrics } from '../../lib/choria/connectorMetrics';
import { Logger } from '../../lib/logger';
import { ConfigurationError, ProvisionerConfig } from '../../lib/provision/config/config';
import { ConnectionPlan, connectionPlan } from '../../streams/choria/connectionPlan';
import { resolveBrokers } from '../../streams/choria/srvLookup';
import { CredentialWatch } from '../../streams/credentialWatch';
import { FleetConnection, openNatsConnection } from '../../streams/natsConnection';
import { nodeSiteFiles } from '../../streams/siteFiles';
import { pkcs11Pin, pkcs11PinSource } from '../../streams/choria/pkcs11Pin';
import type { Pkcs11Token } from '../../streams/choria/pkcs11Token';
import { securityLine } from './securitySummary';

/** The broker connection a provisioner opened, and what it was opened with. */
export interface BrokerConnection {
  connection: FleetConnection;
  plan: ConnectionPlan;
  /** Present when the daemon opened the connection: its credentials, watched. */
  watch?: CredentialWatch;
  /** Stops watching the credentials and, when the daemon opened it, drains the connection. */
  close(): Promise<void>;
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
  const pkcs11 = given === undefined ? await openTokenAtStart(config, choria) : undefined;
  const plan = connectionPlan(config, choria, pkcs11 !== undefined ? { pkcs11 } : {});
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

/**
 * With the `pkcs11` provider (and TLS on), the token opened and logged in before anything is
 * dialled, as go-choria's provider logs in when the framework starts: the PIN from
 * `rxfleet.pkcs11_pin_file`, else asked on the terminal. A token that cannot be opened is a
 * {@link ConfigurationError} naming the Choria configuration, never quoting the PIN.
 */
async function openTokenAtStart(config: ProvisionerConfig, choria: ChoriaClientConfig): Promise<Pkcs11Token | undefined> {
  if (config.choriaInsecure || choria.securityProvider !== 'pkcs11' || choria.pkcs11DriverFile === undefined) return undefined;
  const path = choria.file ?? 'choria config';
  try {
    const pin = await pkcs11Pin(pkcs11PinSource(config.rxfleet.pkcs11PinFile), nodeSiteFiles);
    const { openPkcs11Token } = await import('../../streams/choria/pkcs11Token.js');
    return openPkcs11Token({ driverFile: choria.pkcs11DriverFile, slot: choria.pkcs11Slot }, pin);
  } catch (error) {
    throw new ConfigurationError([{ path, message: (error as Error).message, severity: 'error' }]);
  }
}
