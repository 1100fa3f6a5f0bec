import type { EnricherSettings } from '../../lib/enricher/config/config';
import { redactUrlCredentials } from '../../lib/redact';
import { createLogger } from '../../streams/logOutput';
import { notStarted } from '../daemon/notStarted';
import { runDaemon } from '../daemon/runDaemon';
import { IncusFlags, LogFlags, logSettings } from '../options';
import { ProvisionFlags, provisionSources } from './sources';
import { startProvisioner } from './daemon';
import { applyDaemonHeapPolicy } from './heapPolicy';
import { preflight } from './preflight';
import { listenFailure, startupLines } from './startupFiles';

/** The options of `rxfleet provision`, as commander parses them. */
export interface ProvisionOptions extends ProvisionFlags, LogFlags {
  /** rxfleet's version, for the startup event (the command's own, read once by the bin). */
  version: string;
  pid?: string;
}

/** `rxfleet provision-incus`: the enricher's settings, beside the provisioner's. */
export interface EnricherFlags extends IncusFlags {
  /** The enricher's configuration file (`rxfleet enrich --config`). */
  enrichConfig?: string;
  dataDir?: string;
}

/** The enricher's settings from its flags, or every problem as a line (`error: ...`). */
async function enricherSettings(flags: EnricherFlags): Promise<{ settings?: EnricherSettings; lines: string[] }> {
  // Loaded only for provision-incus, so `provision` does not pay for the enricher's modules.
  const { loadEnrichSettings } = await import('../enrich/commandLine.js');
  const { EnricherConfigError } = await import('../../lib/enricher/config/config.js');
  try {
    const { settings, warnings } = loadEnrichSettings({ ...flags, config: flags.enrichConfig }, { outputRequired: false });
    return { settings, lines: warnings.map((w) => `warning: ${w}`) };
  } catch (error) {
    if (!(error instanceof EnricherConfigError)) throw error;
    return { lines: error.problems.map((p) => redactUrlCredentials(`error: ${p}`)) };
  }
}

/**
 * Runs `rxfleet provision` with {@link runDaemon}'s contract (pid file, signals, exit codes). First
 * the {@link preflight} checks `rxfleet validate` runs, and the pid file, log file and monitor port
 * (each a configuration error naming its key): on any error nothing starts, every problem is printed
 * one line each and the exit code is 1. The warnings are logged.
 *
 * With `withEnricher` it is `rxfleet provision-incus`: the enricher's settings are checked too
 * (every problem of both printed before anything starts), and the enricher runs in the same
 * process feeding the provisioner (`startProvisionerWithEnricher`); a signal stops both.
 */
export async function runProvision(options: ProvisionOptions, withEnricher?: EnricherFlags): Promise<number> {
  const command = withEnricher === undefined ? 'provision' : 'provision-incus';
  const sources = provisionSources(options);
  const checked = await preflight(sources);
  const enrich = withEnricher === undefined ? undefined : await enricherSettings(withEnricher);
  const config = checked.config;
  const resources =
    config === undefined
      ? undefined
      : { configFile: options.config, config, pidFile: options.pid, monitorFromFlag: sources.overrides?.monitor !== undefined };
  // What would fail later fails here, named.
  const problems = [...checked.lines, ...(enrich?.lines ?? []), ...(resources !== undefined ? await startupLines(resources) : [])];
  const enricher = enrich?.settings;
  const failed = problems.some((line) => line.startsWith('error: ')) || (enrich !== undefined && enricher === undefined);
  if (config === undefined || resources === undefined || failed) return notStarted(command, problems);

  const { level, format } = logSettings(options, config.logLevel);
  let logger: ReturnType<typeof createLogger>;
  try {
    logger = createLogger({
      level,
      // A log file is written as go-choria writes one (logrus's JSON), unless told otherwise.
      format: format ?? config.rxfleet.logFormat ?? (typeof config.logDestination === 'object' ? 'logrus-json' : undefined),
      destination: config.logDestination,
      name: `rxfleet-${command}`,
    });
  } catch (error) {
    return notStarted(command, [`error: ${options.config}: logfile: ${(error as Error).message}`]);
  }
  // The same lines `rxfleet validate` prints, without their severity: the log level says it.
  for (const line of problems) logger.warn(line.replace(/^warning: /, ''));

  const daemonOptions = { config, choria: checked.choria, logger, version: options.version };
  return runDaemon({
    command,
    logger,
    pidFile: options.pid,
    // The daemon enforces the grace period itself and stops cleanly after it; this is the backstop.
    backstopMs: config.rxfleet.shutdownGraceMs + 15_000,
    start: async () => {
      applyDaemonHeapPolicy(logger);
      if (enricher === undefined) return startProvisioner(daemonOptions);
      const { startProvisionerWithEnricher } = await import('./withEnricher.js');
      return startProvisionerWithEnricher(daemonOptions, enricher);
    },
    configurationError: (error) => listenFailure(error, resources),
  });
}
