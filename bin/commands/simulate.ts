import { Command, InvalidArgumentError, Option } from 'commander';
import { addLogOptions, addNatsOptions, duration, durationOption, fraction, nonNegativeInt, positiveInt } from '../options';
import { validateLifecycleComponent } from '../../lib/choria/lifecycleComponent';
import type { SimulateOptions } from '../simulateRun';

function component(value: string): string {
  try {
    validateLifecycleComponent(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return value;
}

function wholeNumber(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError(`expected a whole number, got "${value}"`);
  return n;
}

/** `rxfleet simulate`: a fleet of Choria servers in provisioning mode on one NATS connection. */
export function registerSimulate(program: Command): void {
  const command = program
    .command('simulate')
    .usage('--nodes <n> [--nats <urls>] [options]')
    .description(
      'a fleet of N Choria servers in provisioning mode on NATS, speaking the real wire protocol (discovery, rpcutil, choria_provision, lifecycle events); without --nats, on a private nats-server it starts (and stops) itself',
    );
  addNatsOptions(command, { token: true, tls: true })
    .addOption(new Option('--nodes <n>', 'how many servers (required)').argParser(positiveInt).makeOptionMandatory())
    .option('--token <token>', 'the provisioning token the servers expect (empty: no check)', '')
    .addOption(
      new Option('--lifecycle-format <format>', 'startup events as CloudEvents or in the legacy Choria format')
        .choices(['cloudevents', 'choria'])
        .default('cloudevents'),
    )
    .option('--component <name>', 'lifecycle component while in provisioning mode', component, 'provision_mode_server')
    .option('--boot-rate <n>', 'servers booting per second (0: all at once)', nonNegativeInt, 0)
    .addOption(durationOption('--latency <duration>', 'added before every reply', 0))
    .option('--failure-rate <f>', 'fraction of RPCs answered with "simulated failure" (0 to 1)', fraction, 0)
    .option('--silent <n>', 'servers that never answer', nonNegativeInt, 0)
    .option(
      '--server-version <v>',
      "the servers' version (inventory, startup events; before 0.23 the jwt reply names edch_public)",
      '0.29.4',
    )
    .option('--upgradable', 'inventory says upgradable and the JWT allows release_update')
    .option('--fail-upgrades', 'release_update fails and rolls back')
    .option('--restart-delay <duration>', 'replaces the restart splay (default: 2s for splay 1)', duration)
    .option('--shutdown-delay <duration>', 'replaces the shutdown delay (default: 0 to 9s)', duration)
    .option(
      '--jwt-key <file>',
      'private key signing the provisioning JWT: PEM (ed25519 or RSA) or a 64-hex ed25519 seed (default: a new key)',
    )
    .addOption(new Option('--jwt-key-type <type>', 'type of the generated JWT signing key').choices(['ed25519', 'rsa']).default('ed25519'))
    .option('--jwt-public-key-out <file>', "write the JWT verification key (for the provisioner's jwt_verify_cert) to this file")
    .option('--per-node-keys', 'a new RSA key per gencsr and ed25519 key per gen25519, as real servers (slow for big fleets)')
    .option('--name-prefix <prefix>', 'identities are <prefix>-<n>.<domain>', 'node')
    .option('--domain <domain>', 'identities are <prefix>-<n>.<domain>', 'example.net')
    .option('--duration <duration>', 'stop after this long (default: run until a signal)', duration)
    .option('--exit-when-provisioned', 'stop once every server is provisioned or shut down')
    .addOption(durationOption('--report-every <duration>', 'progress line interval (0: none)', 1000))
    .option('--json', 'report as JSON lines')
    .option('--seed <n>', 'seed the randomness (failures, splays) to repeat a run', wholeNumber)
    .option('--lock-window <duration>', 'how long a provisioning lock lasts (default: 2m, as go-choria)', duration)
    .option('--trace', 'report every request a node receives: who asked (callerid), what, when')
    .option(
      '--require-signed',
      'servers whose provisioning JWT says chs: true: unsigned v1 requests, and signatures that do not verify against --ca, are dropped',
    )
    .option('--ca <file>', "the CA (PEM) a signed request's certificate must chain to (with --require-signed)");
  addLogOptions(command, { defaultLevel: 'warn', stream: 'stderr' }).action(async (options: SimulateOptions, self: Command) => {
    if (options.requireSigned === true && options.ca === undefined)
      self.error('error: --require-signed needs --ca <file>: the CA that signed requests are verified against');
    // Loaded when the command runs, so other commands and --help do not pay for the fleet's crypto and NATS modules.
    const { runSimulate } = await import('../simulateRun.js');
    process.exitCode = await runSimulate(options);
  });
}
