import { Registry } from 'prom-client';
import { Subject } from 'rxjs';
import { EnricherSettings } from '../../lib/enricher/config/config';
import { EventPayload } from '../../lib/enricher/output/payload';
import { Logger, silentLogger } from '../../lib/logger';
import { EnrichDaemon, startEnrichDaemon } from '../enrich/daemon';
import { ProvisionerDaemon, ProvisionerDaemonOptions, StopReport, startProvisioner } from './daemon';

/** A provisioner and the enricher that feeds it, in one process. */
export interface ProvisionerWithEnricher extends ProvisionerDaemon {
  readonly enricher: EnrichDaemon;
}

/**
 * `rxfleet provision-incus`: the enricher and the provisioner in one process, wired in-process.
 * The enricher starts first, handing every event it sends on to the provisioner's Incus feed
 * (with `rxfleet.incus` or, without that section, every default) and to whatever outputs its own
 * settings name (NATS subjects for other consumers, JSON lines); its own monitor endpoint is off.
 * Both share one registry, served on the provisioner's endpoint (`monitor_port`, `--monitor`),
 * whose /ready waits for both and whose /health describes the enricher under `enricher`.
 *
 * The result is the provisioner, whose `stop` also stops the enricher (both drain at once), and
 * whose `stopped` resolves once both have (the enricher is stopped whenever the provisioner is). If the enricher ends by itself (its event stream
 * ended, which the real one never does), the provisioner is stopped too and the report says so.
 * If the provisioner cannot start, the enricher is stopped before the error is thrown.
 */
export async function startProvisionerWithEnricher(
  options: ProvisionerDaemonOptions,
  enrich: EnricherSettings,
): Promise<ProvisionerWithEnricher> {
  const logger: Logger = options.logger ?? silentLogger;
  const registry = options.registry ?? new Registry();
  const events = new Subject<EventPayload>();
  const enricher = await startEnrichDaemon(
    { ...enrich, http: undefined },
    { logger: logger.child({ daemon: 'enrich' }), registry, consumer: (payload) => events.next(payload) },
  );
  let daemon: ProvisionerDaemon;
  try {
    daemon = await startProvisioner({
      ...options,
      registry,
      logger,
      incusEvents: events,
      companion: { name: 'enricher', ready: () => enricher.ready(), status: () => enricher.status() },
    });
  } catch (error) {
    await enricher.stop();
    throw error;
  }

  let stopping: Promise<StopReport> | undefined;
  const stop = (stopOptions?: { graceMs?: number }): Promise<StopReport> => {
    stopping ??= (async () => {
      const [report] = await Promise.all([daemon.stop(stopOptions), enricher.stop()]);
      events.complete();
      return report;
    })();
    return stopping;
  };
  let enricherEnded: string | undefined;
  void enricher.done.then((end) => {
    if (end === 'stopped' || stopping !== undefined) return;
    enricherEnded = end === 'failed' ? 'the enricher pipeline failed' : 'the Incus event stream ended';
    logger.error(
      `the enricher stopped by itself (${end === 'failed' ? 'its pipeline failed' : 'its event stream ended'}): stopping the provisioner`,
    );
    void stop({ graceMs: 0 });
  });
  // However the provisioner stops (a stop, or its own failure), the enricher stops with it.
  const stopped = (async (): Promise<StopReport> => {
    const report = await daemon.stopped;
    await enricher.stop();
    return enricherEnded === undefined || report.failed !== undefined ? report : { ...report, failed: enricherEnded };
  })();
  return { ...daemon, enricher, stop, stopped };
}
