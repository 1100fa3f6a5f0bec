import { Command, Option } from 'commander';
import type { EnrichOptions } from '../enrich/run';
import { addIncusOptions, addLogOptions, addMonitorOption, addNatsOptions, repeated } from '../options';

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
    .option('--pid <file>', 'write the process id here once running; removed on exit')
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
    // Loaded when the command runs, so other commands and --help do not pay for the daemon's modules.
    const { runEnrich } = await import('../enrich/run.js');
    process.exitCode = await runEnrich({ ...options, debug: options.debug === true || program.opts<{ debug?: boolean }>().debug === true });
  });
}
