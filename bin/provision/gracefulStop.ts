import { formatGoDuration } from '../../lib/duration';
import { Logger } from '../../lib/logger';
import { StopOptions, StopReport } from '../daemon/contract';

/** What a provisioner's stop works on. */
export interface StopParts {
  logger: Logger;
  /** `rxfleet.shutdown_grace`, unless the caller gives another. */
  graceMs: number;
  /** Cycles in flight now. */
  inFlight(): number;
  /** Stops discovery, events and admission, and drops queued nodes (the next run rediscovers them). */
  stopSources(): void;
  /** Aborts the cycles still in flight: RPC waits end and helpers' process groups are killed. */
  abort(reason: Error): void;
  /** Resolves once the pipeline has completed: every admitted cycle has ended. */
  pipelineDone: Promise<void>;
  /** Closes what the daemon opened, in order, once no cycle runs. */
  teardown(): Promise<void>;
  /** Set when the daemon stops itself because its pipeline failed: why. */
  failure(): string | undefined;
}

/**
 * DECISIONS P9 for the provisioner: stop the sources at once, let the cycles in flight finish within
 * the grace period, abort the rest, then tear down. `stop` is idempotent (every call gets the first
 * call's report) and `stopped` resolves with the same report, however the stop was started.
 */
export function gracefulStop(parts: StopParts): { stop(options?: StopOptions): Promise<StopReport>; stopped: Promise<StopReport> } {
  const { logger } = parts;
  let stopping: Promise<StopReport> | undefined;
  let resolveStopped!: (report: StopReport) => void;
  const stopped = new Promise<StopReport>((resolve) => (resolveStopped = resolve));
  const run = async (graceMs: number): Promise<StopReport> => {
    const inFlight = parts.inFlight();
    logger.info(
      { inFlight, graceMs },
      `stopping: no more discovery or admission; ${inFlight} node${inFlight === 1 ? '' : 's'} in flight may finish within ${formatGoDuration(graceMs)}`,
    );
    parts.stopSources();
    let abandoned = 0;
    const timer = setTimeout(() => {
      abandoned = parts.inFlight();
      logger.warn({ abandoned }, `shutdown grace period over: aborting ${abandoned} node${abandoned === 1 ? '' : 's'} still in flight`);
      parts.abort(new Error('the shutdown grace period is over'));
    }, graceMs);
    await parts.pipelineDone;
    clearTimeout(timer);
    await parts.teardown();
    logger.info({ abandoned }, 'stopped');
    const failed = parts.failure();
    const report: StopReport = failed === undefined ? { abandoned } : { abandoned, failed };
    resolveStopped(report);
    return report;
  };
  return {
    stop: (options = {}) => (stopping ??= run(options.graceMs ?? parts.graceMs)),
    stopped,
  };
}
