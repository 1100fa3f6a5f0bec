import { EnricherConfigError } from '../../lib/enricher/config/config';
import { redactUrlCredentials } from '../../lib/redact';
import { createLogger } from '../../streams/logOutput';
import { notStarted } from '../daemon/notStarted';
import { runDaemon } from '../daemon/runDaemon';
import { LogFlags, logSettings } from '../options';
import { EnrichFlags, loadEnrichSettings } from './commandLine';
import { startEnrichDaemon } from './daemon';

/** The flags of `rxfleet enrich`, as commander parses them, with those that only steer the log. */
export interface EnrichOptions extends EnrichFlags, LogFlags {
  pid?: string;
}

// The enricher has no grace period of its own: its drain ends within a read's timeout.
const ENRICH_BACKSTOP_MS = 30_000;

/**
 * Runs `rxfleet enrich` with {@link runDaemon}'s contract (pid file, signals, exit codes): settings
 * from the file and flags first, every problem on its own line on stderr and exit 1 if any is an
 * error (the provisioner's words: `rxfleet validate`, `provision-incus`); the warnings logged.
 */
export async function runEnrich(options: EnrichOptions): Promise<number> {
  let loaded;
  try {
    loaded = loadEnrichSettings(options);
  } catch (error) {
    if (!(error instanceof EnricherConfigError)) throw error;
    return notStarted(
      'enrich',
      error.problems.map((problem) => redactUrlCredentials(`error: ${problem}`)),
    );
  }
  const { settings, warnings } = loaded;
  // Event lines own stdout when they are asked for; the log moves to stderr then.
  const { level, format } = logSettings(options, 'info');
  const logger = createLogger({ level, format, destination: settings.outputs.stdout ? 'stderr' : 'stdout', name: 'rxfleet-enrich' });
  for (const warning of warnings) logger.warn(warning);
  return runDaemon({
    command: 'enrich',
    logger,
    pidFile: options.pid,
    backstopMs: ENRICH_BACKSTOP_MS,
    start: () => startEnrichDaemon(settings, { logger }),
  });
}
