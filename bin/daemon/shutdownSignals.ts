import { Logger, silentLogger } from '../../lib/logger';

/** Options for {@link handleShutdownSignals}. */
export interface ShutdownOptions {
  /** Stop taking new work and finish what is in flight; resolves when done. */
  graceful: () => Promise<void>;
  /** How long `graceful` may take before the process exits anyway. Default 30 s. */
  graceMs?: number;
  logger?: Logger;
  /** Called to end the process; default `process.exit`. Tests pass their own. */
  exit?: (code: number) => void;
  signals?: NodeJS.Signals[];
}

/**
 * DECISIONS P9: the first SIGINT/SIGTERM starts a graceful stop (in-flight work may finish within
 * the grace period, then exit 0); a second signal, or the grace period running out, exits at once
 * (code 1 for a second signal or a timeout). It logs the signal once; what stopping does and that
 * it is done are the command's own lines (a daemon logs its grace period and `stopped`), so nothing
 * is said twice. Returns a function that removes the handlers.
 */
export function handleShutdownSignals(options: ShutdownOptions): () => void {
  const {
    graceful,
    graceMs = 30_000,
    logger = silentLogger,
    exit = (code) => process.exit(code),
    signals = ['SIGINT', 'SIGTERM'],
  } = options;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting at once');
      exit(1);
      return;
    }
    stopping = true;
    // The command says what stopping means for it (what is in flight, its grace period).
    logger.info({ signal }, `${signal}: stopping (send it again to exit at once)`);
    const timer = setTimeout(() => {
      logger.warn({ backstopMs: graceMs }, 'the stop did not finish in time: exiting with work still in flight');
      exit(1);
    }, graceMs);
    timer.unref();
    graceful().then(
      () => {
        clearTimeout(timer);
        exit(0);
      },
      (error: unknown) => {
        clearTimeout(timer);
        logger.error({ err: error }, 'graceful stop failed');
        exit(1);
      },
    );
  };
  for (const signal of signals) process.on(signal, onSignal);
  return () => {
    for (const signal of signals) process.off(signal, onSignal);
  };
}
