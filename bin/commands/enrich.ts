import { Command, Option } from 'commander';
import type { EnrichFlags } from '../enrich/commandLine';
import { LogFlags, addIncusOptions, addLogOptions, addMonitorOption, addNatsOptions, logSettings, repeated } from '../options';

/** The flags commander parses, with those that only steer the log. */
interface EnrichOptions extends EnrichFlags, LogFlags {}

/**
 * Runs `rxfleet enrich` until a signal: settings from the file and flags (every problem on its own
 * line on stderr, exit 1), the daemon, and the graceful stop of DECISIONS P9 (first SIGINT/SIGTERM:
 * drain and exit 0; a second: exit at once). Returns the exit code when it ends by itself.
 */
async function runEnrich(options: EnrichOptions): Promise<number> {
  // Loaded when the command runs, so other commands and --help do not pay for the daemon's modules.
  const { loadEnrichSettings } = await import('../enrich/commandLine.js');
  const { EnricherConfigError } = await import('../../lib/enricher/config/config.js');
  const { startEnrichDaemon } = await import('../enrich/daemon.js');
  const { createLogger } = await import('../../streams/logOutput.js');
  const { handleShutdownSignals } = await import('../shutdown.js');
  const { redactUrlCredentials } = await import('../../lib/redact.js');

  let loaded;
  try {
    loaded = loadEnrichSettings(options);
  } catch (error) {
    if (!(error instanceof EnricherConfigError)) throw error;
    // The provisioner's words (rxfleet validate, provision-incus): one `error:` line each, then the count.
    for (const problem of error.problems) console.error(redactUrlCredentials(`error: ${problem}`));
    const errors = error.problems.length;
    console.error(`rxfleet enrich: not started: ${errors} configuration error${errors === 1 ? '' : 's'}`);
    return 1;
  }
  const { settings, warnings } = loaded;
  // Event lines own stdout when they are asked for; the log moves to stderr then.
  const { level, format } = logSettings(options, 'info');
  const logger = createLogger({
    level,
    ...(format !== undefined ? { format } : {}),
    destination: settings.outputs.stdout ? 'stderr' : 'stdout',
    name: 'rxfleet-enrich',
  });
  for (const warning of warnings) logger.warn(warning);

  let daemon;
  try {
    daemon = await startEnrichDaemon(settings, { logger });
  } catch (error) {
    console.error(redactUrlCredentials(`rxfleet enrich: ${error instanceof Error ? error.message : String(error)}`));
    return 1;
  }
  const exit = (code: number): void => {
    // The log is asynchronous: let its last lines out before the process goes.
    const fallback = setTimeout(() => process.exit(code), 1000);
    fallback.unref();
    logger.flush(() => process.exit(code));
  };
  const removeSignals = handleShutdownSignals({
    graceful: () => daemon.stop(),
    logger,
    graceMs: 30_000,
    exit: (code) => (code === 0 ? exit(0) : process.exit(code)),
  });
  const end = await daemon.done;
  removeSignals();
  return end === 'stopped' ? 0 : 1;
}

/** `rxfleet enrich`: the Incus event enricher daemon. */
export function registerEnrich(program: Command): void {
  const command = program
    .command('enrich')
    .description(
      "enrich an Incus or LXD server's lifecycle events and publish them to NATS subjects and/or JSON lines on stdout; flags override the configuration file",
    )
    .option('--config <file>', 'configuration file (YAML or JSON)');
  addIncusOptions(command);
  addNatsOptions(command, { token: true, tls: true })
    .option('--subject-prefix <prefix>', 'subjects are <prefix>.<project>.<kind>.<action>.<name> (default: incus.events)')
    .option('--stdout', 'write each event as a JSON line on stdout (the log goes to stderr)');
  addMonitorOption(command, ':9153, the http key of the configuration')
    // The flag's name before the vocabulary was one: still accepted, not shown.
    .addOption(new Option('--http <address>').hideHelp())
    .option('--data-dir <dir>', 'keep the cold store here (created 0700 if missing; kept on exit)')
    .option('--project <name>', 'serve this project (repeatable; default: every project)', repeated)
    .option('--project-marker <key=value>', 'serve projects whose configuration has key=value (a bare key: is true)')
    .option(
      '--instance <selector>',
      'serve instances whose configuration has key=value, or whose name matches a pattern (* and ?); repeatable, any may match (default: every instance)',
      repeated,
    )
    .option('--workers <n>', 'reads (and polls for an address) at once against the server (default: 16)')
    .option('--read-timeout <duration>', 'one REST call (default: 10s)')
    .option('--ip-timeout <duration>', "how long a read waits for a started instance's address (default: 10s)")
    .option('--read-delay <duration>', 'between the reads of a paced round (default: 5s)')
    .option('--sweep-interval <duration>', 'between rounds (default: 6h)')
    .option('--store-interval <duration>', 'between cold store writes (default: 5s)')
    .option('--debounce-window <duration>', 'quiet that closes a burst; 0 for off (default: 250ms)')
    .option('--ttl <duration>', 're-read an instance this long after its last read; 0 for off (default: 0)');
  addLogOptions(command, { defaultLevel: 'info', stream: 'stdout, or stderr with --stdout' }).action(async (options: EnrichOptions) => {
    process.exitCode = await runEnrich({ ...options, debug: options.debug === true || program.opts<{ debug?: boolean }>().debug === true });
  });
}
