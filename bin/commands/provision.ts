import { Command } from 'commander';
import type { ProvisionOptions } from '../provisionRun';

/** `rxfleet provision` (alias `run`, as upstream): the Choria provisioner daemon. */
export function registerProvision(program: Command): void {
  program
    .command('provision')
    .alias('run')
    .description('the provisioner daemon: a drop-in replacement for the Choria Provisioner')
    .requiredOption('--config <file>', 'the provisioner YAML configuration')
    .option('--choria-config <file>', 'the Choria client configuration (default: the first of ~/.choriarc, ~/.mcollective, /etc/choria/client.conf, ...)')
    .option('--pid <file>', 'write the process id here once running; removed on exit')
    .option('--debug', 'log at debug level', false)
    .option('--pretty', 'human-readable log lines (default when stdout is a terminal)')
    .action(async (options: Omit<ProvisionOptions, 'version'>) => {
      // Loaded when the command runs, so --help and other commands do not pay for NATS, crypto and ajv.
      const { runProvision } = await import('../provisionRun.js');
      // `rxfleet --debug run ...` (upstream's spelling) sets the program's --debug.
      const debug = options.debug || program.opts<{ debug?: boolean }>().debug === true;
      process.exitCode = await runProvision({ ...options, debug, version: program.version() ?? '0.0.0' });
    });
}
