import { Command } from 'commander';
import { addIncusOptions, addLogOptions } from '../options';
import { addProvisionSourceOptions } from '../provision/sources';
import type { EnricherFlags, ProvisionOptions } from '../provision/run';

/**
 * `rxfleet provision-incus`: `rxfleet provision` with `rxfleet enrich` in the same process, the
 * enricher's events handed to the provisioner's Incus feed without NATS. The provisioner's flags
 * (upstream's included) work as they do on `provision`; the enricher's configuration file, its
 * server and its cold store have their own.
 */
export function registerProvisionIncus(program: Command): void {
  const command = program
    .command('provision-incus')
    .usage('--config <file> [options]')
    .description(
      'the provisioner and the Incus enricher in one process, for small sites: Choria servers in Incus or LXD instances are sighted the moment their instance comes up with an address (rxfleet.incus of the configuration), beside discovery and startup events',
    );
  addProvisionSourceOptions(command).option('--pid <file>', 'write the process id here once running; removed on exit');
  command.option(
    '--enrich-config <file>',
    "the enricher's configuration (as rxfleet enrich --config; its outputs are optional here, its http is not served: /metrics of both are on --monitor)",
  );
  addIncusOptions(command).option('--data-dir <dir>', 'keep the cold store here (created 0700 if missing; kept on exit)');
  addLogOptions(command, { defaultLevel: 'loglevel of the configuration, info', stream: 'stdout, or logfile of the configuration' }).action(
    async (options: Omit<ProvisionOptions, 'version'> & EnricherFlags) => {
      // Loaded when the command runs, so --help and other commands do not pay for the daemons.
      const { runProvision } = await import('../provision/run.js');
      const debug = options.debug === true || program.opts<{ debug?: boolean }>().debug === true;
      const { enrichConfig, incus, clientCert, clientKey, serverCert, serverFingerprint, dataDir, ...provision } = options;
      const enricher: EnricherFlags = { enrichConfig, incus, clientCert, clientKey, serverCert, serverFingerprint, dataDir };
      process.exitCode = await runProvision({ ...provision, debug, version: program.version() ?? '0.0.0' }, enricher);
    },
  );
}
