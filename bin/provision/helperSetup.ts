import { Registry } from 'prom-client';
import { PauseGate } from '@rxfleet/operators';
import { Logger } from '../../lib/logger';
import { ProvisionerConfig } from '../../lib/provision/config/config';
import { HelperPoolMetrics } from '../../lib/provision/metrics/helperPoolMetrics';
import { ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { CycleHelper } from '../../lib/provision/cycle/provisionCycle';
import { HelperRunner } from '../../streams/helper/helperRunner';
import { PersistentHelper } from '../../streams/helper/persistentHelper';

/** The helper a daemon runs, whichever its mode, and how to stop it. */
export interface DaemonHelper {
  readonly helper: CycleHelper;
  /** After the cycles have finished: persistent processes are told to exit (stdin closed), then killed. */
  close(): Promise<void>;
  /** At once, for a process about to exit: persistent processes' groups are killed. */
  kill(): void;
}

/** What {@link startHelper} needs besides the configuration. */
export interface HelperSetup {
  gate: PauseGate;
  metrics: ProvisionerMetrics;
  registry: Registry;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
}

/**
 * The helper of `rxfleet.helper_mode`: `per-node` (upstream's contract, a process per node, whose
 * runs the cycle's hard stop aborts) or `persistent` (`helper_processes` long-running processes,
 * started now, with their own metrics, DECISIONS P17). Both honour the pause gate and
 * `helper_timeout`, and count upstream's `helper_time` and `helper_errors`.
 */
export function startHelper(config: ProvisionerConfig, setup: HelperSetup): DaemonHelper {
  const { gate, metrics, logger, env } = setup;
  const common = { command: config.helper, timeoutMs: config.rxfleet.helperTimeoutMs, gate, logger, env };
  if (config.rxfleet.helperMode === 'per-node') {
    return { helper: new HelperRunner({ ...common, metrics }), close: async () => undefined, kill: () => undefined };
  }
  const pool = new PersistentHelper({
    ...common,
    processes: config.rxfleet.helperProcesses,
    metrics: new HelperPoolMetrics(metrics, setup.registry),
  });
  logger.info(
    { processes: config.rxfleet.helperProcesses },
    `persistent helper: ${config.rxfleet.helperProcesses} process${config.rxfleet.helperProcesses === 1 ? '' : 'es'} of ${config.helper}`,
  );
  return { helper: pool, close: () => pool.close(), kill: () => pool.kill() };
}
