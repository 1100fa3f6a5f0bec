import { Registry } from 'prom-client';
import { Subject } from 'rxjs';
import { EnricherSettings } from '../../lib/enricher/config/config';
import { EventPayload } from '../../lib/enricher/output/payload';
import { silentLogger } from '../../lib/logger';
import { StopReport } from '../daemon/contract';
import { EnrichDaemon, startEnrichDaemon } from '../enrich/daemon';
import { ProvisionerDaemon, ProvisionerDaemonOptions, startProvisioner } from './daemon';

/** A provisioner and the enricher that feeds it, in one process. */
export interface ProvisionerWithEnricher extends ProvisionerDaemon {
  readonly enricher: EnrichDaemon;
}

/**
 * `rxfleet provision-incus`: the enricher and the provisioner in one process, one daemon to
 * `runDaemon`. The enricher starts first and hands every event to the provisioner's Incus feed (with
 * `rxfleet.incus` or, without that section, every default) and to the outputs its own settings name;
 * its monitor endpoint is off. Both share one registry, served on the provisioner's endpoint, whose
 * /ready waits for both and whose /health describes the enricher under `enricher`.
 *
 * Either stopping stops the other: `stop` drains both at once; an enricher that ends by itself (its
 * event stream ended, its pipeline failed) stops the provisioner at once and `stopped` says why; a
 * provisioner that stops by itself stops the enricher. If the provisioner cannot start, the enricher
 * is stopped before the error is thrown.
 */
export async function startProvisionerWithEnricher(
  options: ProvisionerDaemonOptions,
  enrich: EnricherSettings,
): Promise<ProvisionerWithEnricher> {
  const logger = options.logger ?? silentLogger;
  const registry = options.registry ?? new Registry();
  const events = new Subject<EventPayload>();
  const consumer = (payload: EventPayload): void => events.next(payload);
  const enricher = await startEnrichDaemon(
    { ...enrich, http: undefined },
    { logger: logger.child({ daemon: 'enrich' }), registry, consumer },
  );
  const companion = { name: 'enricher', ready: () => enricher.ready(), status: () => enricher.status() };
  const daemon = await startProvisioner({ ...options, registry, logger, incusEvents: events, companion }).catch(async (error: unknown) => {
    await enricher.stop();
    throw error;
  });

  const stopped = daemon.stopped.then(async (report): Promise<StopReport> => {
    const enricherReport = await enricher.stop();
    events.complete();
    return report.failed !== undefined || enricherReport.failed === undefined ? report : { ...report, failed: enricherReport.failed };
  });
  void enricher.stopped.then(({ failed }) => {
    if (failed === undefined) return;
    logger.error(`the enricher stopped by itself (${failed}): stopping the provisioner`);
    void daemon.stop({ graceMs: 0 });
  });
  return {
    ...daemon,
    enricher,
    stop: (stopOptions) => {
      void daemon.stop(stopOptions);
      void enricher.stop();
      return stopped;
    },
    stopped,
  };
}
