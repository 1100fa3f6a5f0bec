import { errorMessage } from '../../lib/choria/errors';
import { Logger } from '../../lib/logger';
import { ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { PipelineHooks } from '../../lib/provision/pipeline';
import { CycleError } from '../../lib/provision/cycle/provisionCycle';
import { Sighting } from '../../lib/provision/sightings/sighting';

/** How the admission line says where a sighting came from (upstream's words for its two). */
const ADMITTED_AFTER: Record<Sighting['via'], string> = {
  discovery: 'discovering it',
  event: 'receiving an event',
  incus: 'its Incus instance came up',
};

/** What {@link pipelineHooks} reports to. */
export interface PipelineReporting {
  metrics: ProvisionerMetrics;
  logger: Logger;
  /** Named in the line for a full work queue. */
  queueCapacity: number;
  /** Told the busy worker count at each change. */
  onBusy: (busy: number) => void;
}

/**
 * What the provisioner's pipeline tells its operator: each event counted in upstream's series (or
 * rxfleet's own, where upstream has none) and logged with upstream's words. A re-admission (P1) is
 * not counted as discovered, a refusal not as an error (P3), a lock or claim refusal neither as
 * provisioned nor as an error (P10, P16); helper shutdowns and upgrades count as provisioned (P7).
 */
export function pipelineHooks({ metrics, logger, queueCapacity, onBusy }: PipelineReporting): PipelineHooks {
  return {
    discoveryStarted: () => {
      metrics.discoverCycle();
      logger.debug('discovering nodes in provisioning mode');
    },
    discoveryFailed: (error) => {
      metrics.discoveryError();
      logger.error({ err: error }, `discovery failed: ${errorMessage(error)}`);
    },
    discoveryFinished: (found, fresh) =>
      logger.info({ found, new: fresh }, `discovery found ${found} node${found === 1 ? '' : 's'} in provisioning mode, ${fresh} new`),
    discoverySkipped: () => logger.warn('Skipping discovery while paused'),
    droppedWhilePaused: (s) =>
      logger.debug(
        { identity: s.identity, via: s.via },
        s.via === 'event' ? 'Skipping event processing while paused' : 'dropping a discovered node while paused',
      ),
    admitted: (ticket) => {
      // Upstream counts a node once while it is held; a re-admission (P1) has a series of its own.
      if (ticket.value.readmission === true) metrics.readmitted(ticket.value.via);
      else if (ticket.value.via === 'event') metrics.eventDiscovered();
      else if (ticket.value.via === 'incus') metrics.incusDiscovered();
      else metrics.discovered();
      logger.info(
        { identity: ticket.key, via: ticket.value.via },
        `Adding ${ticket.key} to the provision list after ${ADMITTED_AFTER[ticket.value.via]}`,
      );
    },
    refused: (refusal) => {
      metrics.admissionRefused(refusal.reason);
      if (refusal.reason === 'full')
        logger.warn({ identity: refusal.key, capacity: queueCapacity }, `Adding ${refusal.key} to the work queue failed: it is full`);
      else logger.debug({ identity: refusal.key }, `${refusal.key} is already on the provision list`);
    },
    backedOff: (s) => {
      metrics.admissionRefused('backoff');
      logger.debug({ identity: s.identity, via: s.via }, `${s.identity} failed its last cycles: waiting out its backoff`);
    },
    busy: (n) => {
      onBusy(n);
      metrics.setBusyWorkers(n);
    },
    finished: ({ ticket, outcome }) => {
      if (outcome.status === 'skipped') {
        logger.debug({ identity: ticket.key }, `skipping ${ticket.key}: its admission was superseded or reset`);
      } else if (outcome.status === 'failed') {
        metrics.provisionError();
        const step = outcome.error instanceof CycleError ? outcome.error.step : undefined;
        logger.error({ identity: ticket.key, step }, `Could not provision ${ticket.key}: ${errorMessage(outcome.error)}`);
      } else if (outcome.value === 'locked' || outcome.value === 'claimed') {
        // Counted by the cycle (P10) or the claim stage (P16): neither provisioned nor an error.
      } else {
        // P7: helper shutdowns and upgrades count as provisioned, as upstream.
        metrics.provisioned();
        logger.info(
          { identity: ticket.key, result: outcome.value },
          outcome.value === 'provisioned' ? `Provisioned ${ticket.key}` : `Finished ${ticket.key}: ${outcome.value}`,
        );
      }
    },
  };
}
