import { Command, Option } from 'commander';
import { ListenAddress } from '../../lib/addresses';
import { NatsFlags, REQUIRED, addMonitorOption, addNatsOptions, natsServers } from '../options';
import type { ProvisionSources } from './preflight';
import { definedFields } from '../../lib/definedFields';

/** The flags `rxfleet provision` and `rxfleet validate` share: what the provisioner starts from. */
export interface ProvisionFlags extends NatsFlags {
  config: string;
  choriaConfig?: string;
  /** `null`: `--monitor ""`, no endpoint. */
  monitor?: ListenAddress | null;
}

/**
 * Adds upstream's `--config` and `--choria-config`, and the flags that replace a setting of the
 * file (`--nats`, its credentials, `--monitor`), to a command that checks or runs a provisioner.
 */
export function addProvisionSourceOptions(command: Command): Command {
  command
    .addOption(new Option('--config <file>', `the provisioner YAML configuration ${REQUIRED}`).makeOptionMandatory())
    .option(
      '--choria-config <file>',
      'the Choria client configuration (default: the first of ~/.choriarc, ~/.mcollective, /etc/choria/client.conf, /usr/local/etc/choria/client.conf)',
    );
  addNatsOptions(command);
  return addMonitorOption(command, 'monitor_port of the configuration, on every interface');
}

/** The sources the flags name, with the overrides they set. */
export function provisionSources(flags: ProvisionFlags): ProvisionSources {
  const nats = natsServers(flags);
  const overrides: NonNullable<ProvisionSources['overrides']> = {};
  if (nats.servers.length > 0) overrides.natsServers = nats.servers;
  if (nats.user !== undefined) overrides.natsUser = nats.user;
  if (nats.password !== undefined) overrides.natsPassword = nats.password;
  if (flags.natsCreds !== undefined) overrides.natsCredentials = flags.natsCreds;
  if (flags.monitor !== undefined) overrides.monitor = flags.monitor;
  return { config: flags.config, ...definedFields({ choriaConfig: flags.choriaConfig }), overrides };
}
