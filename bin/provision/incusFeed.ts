import type { NatsConnection } from '@nats-io/transport-node';
import { Observable, defer } from 'rxjs';
import { InstancesServed } from '../../lib/enricher/model/instancesServed';
import { EventPayload } from '../../lib/enricher/output/payload';
import { ProjectsServed } from '../../lib/enricher/model/servedProjects';
import { errorMessage } from '../../lib/choria/errors';
import { Logger } from '../../lib/logger';
import { IncusFeedSettings } from '../../lib/provision/sightings/incusFeedConfig';
import { IncusDecision, incusSightings } from '../../lib/provision/sightings/incusSightings';
import { ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { enrichedInstanceEvents, instanceEventSubjects } from '../../streams/incus/enrichedEventFeed';
import { definedFields } from '../../lib/definedFields';

/** What the Incus feed is wired from. */
export interface IncusFeedWiring {
  feed: IncusFeedSettings;
  /** The daemon's connection: the enricher's subjects are read from it unless `events$` is given. */
  nc: NatsConnection;
  /** Enriched events handed over in-process (`rxfleet provision-incus`): no subscription then. */
  events$?: Observable<EventPayload>;
  metrics: ProvisionerMetrics;
  logger: Logger;
}

function projectsText(projects: ProjectsServed): string {
  if (projects.mode === 'all') return 'every project';
  if (projects.mode === 'list') return `projects ${projects.names.join(', ')}`;
  return `projects whose configuration has ${projects.key}${projects.values === 'true' ? ' true' : `=${projects.values.join(',')}`}`;
}

function instancesText(instances: InstancesServed): string {
  if (instances.mode === 'all') return 'every instance';
  return `instances matching ${instances.selectors.map((s) => (s.kind === 'name' ? s.pattern : `${s.key}=${s.values.join(',')}`)).join(' or ')}`;
}

/**
 * The provisioner's third sighting source, wired: enriched instance events from the enricher's
 * subjects on the daemon's connection (or handed over in-process), each decided by
 * {@link incusSightings}, every decision counted in `incus_events_total{result}`, a message that is
 * not an enriched event counted in `malformed_input_total{source="incus_event"}` and logged, a
 * subscription the broker refuses logged at error (the daemon carries on with discovery and
 * startup events). Emits the identities sighted; subscribes when subscribed.
 */
export function incusFeed(wiring: IncusFeedWiring): Observable<string> {
  const { feed, nc, metrics, logger } = wiring;
  return defer(() => {
    const from = wiring.events$ !== undefined ? 'the enricher in this process' : instanceEventSubjects(feed.subjectPrefix);
    logger.info(
      { source: from, identity: feed.identity.text },
      `Incus feed: sighting ${instancesText(feed.instances)} of ${projectsText(feed.projects)} as it comes up with an address, from ${from}; identity ${feed.identity.text}`,
    );
    const events$ =
      wiring.events$ ??
      enrichedInstanceEvents(nc, {
        subjectPrefix: feed.subjectPrefix,
        onMalformed: (subject, reason) => {
          metrics.malformedInput('incus_event');
          logger.warn({ source: 'incus_event', subject, reason }, `refused a malformed incus_event: ${reason}`);
        },
        onError: (error) =>
          logger.error(
            { err: error, subject: from },
            `the Incus feed stopped: cannot subscribe to ${from}: ${errorMessage(error)}; nodes are found by discovery and startup events only`,
          ),
      });
    const onDecision = (d: IncusDecision): void => {
      metrics.incusEvent(d.result);
      const instance = `${d.project}/${d.name}`;
      const fields = {
        instance,
        action: d.action,
        result: d.result,
        ...definedFields({ identity: d.identity, address: d.address }),
      };
      if (d.result === 'sighted')
        logger.info(fields, `Incus instance ${instance} came up at ${d.address} (${d.action}): sighting ${d.identity}`);
      else if (d.result === 'unmapped')
        logger.warn(
          { ...fields, reason: d.reason },
          `Incus instance ${instance} came up but maps to no identity with ${feed.identity.text}: ${d.reason}`,
        );
      else logger.debug(fields, `Incus instance ${instance}: ${d.result} (${d.action})`);
    };
    return events$.pipe(incusSightings({ feed, onDecision }));
  });
}
