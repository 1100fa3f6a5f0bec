import { Command } from 'commander';
import { addLogOptions, positiveInt } from '../options';
import { addProvisionSourceOptions } from '../provision/sources';
import type { ProvisionOptions } from '../provision/run';

/** `rxfleet provision` (alias `run`, as upstream): the Choria provisioner daemon. */
export function registerProvision(program: Command): void {
  const command = program
    .command('provision')
    .alias('run')
    .usage('--config <file> [options]')
    .description(
      "the provisioner daemon: a drop-in replacement for the Choria Provisioner (upstream's --config, --choria-config, --pid and --debug work as they do there)",
    );
  addProvisionSourceOptions(command).option('--pid <file>', 'write the process id here once running; removed on exit');
  command
    .option(
      '--dry-run',
      'rehearse: discover, run the helper for each node and report what would be configured (keys, certificate, JWT claims), claiming nothing and sending no request that changes a node',
    )
    .option('--limit <n>', 'with --dry-run: the first N nodes found, by name', positiveInt)
    .option('--json', 'with --dry-run: the report as JSON lines');
  addLogOptions(command, { defaultLevel: 'loglevel of the configuration, info', stream: 'stdout, or logfile of the configuration' }).action(
    async (options: Omit<ProvisionOptions, 'version'> & { dryRun?: boolean; limit?: number; json?: boolean }) => {
      if (options.dryRun !== true && (options.limit !== undefined || options.json === true))
        command.error('error: --limit and --json go with --dry-run');
      if (options.dryRun === true) {
        const { runDryRun } = await import('../provision/dryRun.js');
        process.exitCode = await runDryRun(options);
        return;
      }
      // Loaded when the command runs, so --help and other commands do not pay for NATS, crypto and ajv.
      const { runProvision } = await import('../provision/run.js');
      // `rxfleet --debug run ...` (upstream's spelling) sets the program's --debug.
      const debug = options.debug === true || program.opts<{ debug?: boolean }>().debug === true;
      process.exitCode = await runProvision({ ...options, debug, version: program.version() ?? '0.0.0' });
    },
  );
}
