import { NatsConnection } from '@nats-io/transport-node';
import { EMPTY, NEVER, Observable, SchedulerLike, filter, map, merge, pairwise } from 'rxjs';
import { BadMessages } from '../../lib/choria/badMessages';
import { isValidLifecycleComponent } from '../../lib/choria/lifecycleComponent';
import { EventPayload } from '../../lib/enricher/output/payload';
import { Logger } from '../../lib/logger';
import { ProvisionerConfig } from '../../lib/provision/config/config';
import { defaultIncusFeed } from '../../lib/provision/sightings/incusFeedConfig';
import { ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { ProvisionPipelineConfig } from '../../lib/provision/pipeline';
import { broadcastDiscovery } from '../../streams/choria/discovery';
import { lifecycleEvents } from '../../streams/choria/lifecycleListener';
import { ChoriaRpcClient } from '../../streams/choria/rpcClient';
import { ConnectionState } from '../../streams/natsConnection';
import { ActiveActive, STARTUP_QUEUE_GROUP } from './activeActive';
import { DaemonTuning } from './daemonTypes';
import { incusFeed } from './incusFeed';

/** What the sources are read from. */
export interface SightingParts {
  config: ProvisionerConfig;
  nc: NatsConnection;
  client: ChoriaRpcClient;
  badMessages: BadMessages;
  connection$: Observable<ConnectionState>;
  activeActive?: ActiveActive | undefined;
  /** Enriched events handed over in-process (`provision-incus`). */
  incusEvents?: Observable<EventPayload> | undefined;
  metrics: ProvisionerMetrics;
  logger: Logger;
  scheduler: SchedulerLike;
  tuning: DaemonTuning;
}

/** The pipeline's sources: discovery rounds, startup events, Incus instances, and requests for a round at once. */
export type Sightings = Pick<ProvisionPipelineConfig, 'discover' | 'startupEvents' | 'incusSightings' | 'discoverNow'>;

/**
 * Where the provisioner sights nodes, as upstream plus the Incus feed:
 * - discovery rounds (a sliding window); active-active spreads each round from a random node;
 * - startup events of `lifecycle_component`, heard by one instance of the queue group in
 *   active-active. A component upstream accepts but NATS cannot subscribe to (a space): upstream
 *   logs the failed subscription and runs on discovery alone, and so does rxfleet;
 * - the Incus feed, from `rxfleet.incus` or, for events handed over in-process, every default;
 * - a round at once after a reconnect (startup events sent meanwhile were lost: core NATS is at
 *   most once) and once active-active is set up (the round at start ran while the gate was closed).
 */
export function sightings(parts: SightingParts): Sightings {
  const { config, nc, client, badMessages, activeActive, metrics, logger, scheduler, tuning } = parts;
  const discovery = { scheduler, idleMs: tuning.discoveryIdleMs, timeoutMs: tuning.discoveryTimeoutMs };
  const spread = activeActive?.spread ?? ((identities: string[]) => identities);
  const incus = config.rxfleet.incus ?? (parts.incusEvents !== undefined ? defaultIncusFeed() : undefined);
  // A component NATS cannot subscribe to (a space) is logged once; the daemon runs on discovery alone.
  const startupEvents = (): Observable<string> => {
    if (!isValidLifecycleComponent(config.lifecycleComponent)) {
      logger.error(
        { component: config.lifecycleComponent },
        `Could not listen for lifecycle events: invalid lifecycle component ${JSON.stringify(config.lifecycleComponent)}; nodes are found by discovery only`,
      );
      return NEVER;
    }
    const queue = activeActive !== undefined ? STARTUP_QUEUE_GROUP : undefined;
    return lifecycleEvents(nc, { component: config.lifecycleComponent, badMessages, logger, queue }).pipe(map((event) => event.identity));
  };
  return {
    discover: () => broadcastDiscovery(client, discovery).pipe(map(spread)),
    startupEvents: startupEvents(),
    incusSightings: incus === undefined ? undefined : incusFeed({ feed: incus, nc, metrics, logger, events$: parts.incusEvents }),
    discoverNow: merge(
      parts.connection$.pipe(
        pairwise(),
        filter(([before, now]) => before === 'disconnected' && now === 'connected'),
      ),
      activeActive?.setUp$ ?? EMPTY,
    ),
  };
}
