import { NatsConnection } from '@nats-io/transport-node';
import { Observable, SchedulerLike } from 'rxjs';
import { BadMessageSource, BadMessages, isUnexpectedReply } from '../../lib/choria/badMessages';
import { Registry } from 'prom-client';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ProtocolMetrics } from '../../lib/choria/connectorMetrics';
import { lifecycleEventJson, lifecycleSubject, newLifecycleEvent } from '../../lib/choria/lifecycle';
import { Logger } from '../../lib/logger';
import { MalformedInputSource, ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { ConnectionPlan } from '../../streams/choria/connectionPlan';
import { ChoriaRpcClient } from '../../streams/choria/rpcClient';
import { ConnectionState } from '../../streams/natsConnection';
import { PROVISIONER_COMPONENT } from './daemonTypes';

const MALFORMED_SOURCE: Record<BadMessageSource, MalformedInputSource | undefined> = {
  reply: 'rpc_reply',
  broadcast_reply: 'discovery_reply',
  lifecycle: 'lifecycle_event',
  request: undefined,
};

/**
 * The instance announces itself, as upstream: a `startup` lifecycle event in the legacy format,
 * component `provisioner`. A failure to publish is logged; it never stops the daemon.
 */
export function announceStartup(nc: NatsConnection, identity: string, version: string, logger: Logger): void {
  try {
    const event = newLifecycleEvent('startup', { identity, component: PROVISIONER_COMPONENT, version });
    nc.publish(lifecycleSubject('startup', PROVISIONER_COMPONENT), lifecycleEventJson(event, 'choria'));
  } catch (error) {
    logger.error({ err: error }, 'could not publish the startup event');
  }
}

/** The RPC client and the refusal counter every reader of the wire shares. */
export interface ChoriaClientParts {
  client: ChoriaRpcClient;
  badMessages: BadMessages;
  close(): void;
}

/**
 * The Choria RPC client over `nc`, as the connection plan says (caller, protocol, signer), with
 * every refused message counted by source (`malformed_input`, `unexpected_reply`) and the log
 * showing the first few of each minute and a summary. Requests whose replies a broker outage lost
 * are sent again as soon as `connection$` says it is back.
 */
export function startChoriaClient(parts: {
  nc: NatsConnection;
  plan: ConnectionPlan;
  choria: ChoriaClientConfig;
  identity: string;
  connection$: Observable<ConnectionState>;
  metrics: ProvisionerMetrics;
  /** Where go-choria's protocol counters (`choria_protocol_*`) are registered. */
  registry: Registry;
  scheduler: SchedulerLike;
  logger: Logger;
}): ChoriaClientParts {
  const { nc, plan, choria, identity, metrics, scheduler, logger } = parts;
  const badMessages = new BadMessages({
    logger,
    scheduler,
    onReport: (source, refusal) => {
      if (isUnexpectedReply(refusal.reason)) return metrics.unexpectedReply(refusal.reason);
      const label = MALFORMED_SOURCE[source];
      if (label !== undefined) metrics.malformedInput(label);
    },
  });
  const client = new ChoriaRpcClient({
    nc,
    identity,
    callerId: plan.callerId,
    callerHash: plan.fips.callerHash,
    protocolMetrics: new ProtocolMetrics(parts.registry, plan.protocol.version),
    protocol: plan.protocol,
    ttl: choria.requestTtlSeconds,
    discoveryTimeoutSeconds: choria.discoveryTimeoutSeconds,
    badMessages,
    connection: parts.connection$,
    scheduler,
    logger,
  });
  return {
    client,
    badMessages,
    close: () => {
      client.close();
      badMessages.close();
    },
  };
}
