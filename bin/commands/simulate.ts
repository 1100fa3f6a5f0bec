import { Command, InvalidArgumentError, Option } from 'commander';
import { fraction, nonNegativeInt, positiveInt } from '../options';
import { validateLifecycleComponent } from '../../lib/choria/lifecycleComponent';
import type { SimulateOptions } from '../simulateRun';

const servers = (value: string, previous: string[] = []): string[] => [...previous, ...value.split(',').map((s) => s.trim()).filter((s) => s !== '')];

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
  program
    .command('simulate')
    .description('a fleet of N Choria servers in provisioning mode on NATS, speaking the real wire protocol (discovery, rpcutil, choria_provision, lifecycle events)')
    .requiredOption('--nats <url>', 'NATS server URL(s), comma-separated or repeated', servers)
    .requiredOption('--nodes <n>', 'how many servers', positiveInt)
    .option('--token <token>', 'the provisioning token the servers expect (empty: no check)', '')
    .option('--user <user>', 'NATS user')
    .option('--password <password>', 'NATS password')
    .option('--tls-ca <file>', 'CA to verify the NATS server with')
    .option('--tls-cert <file>', 'client certificate for NATS')
    .option('--tls-key <file>', 'client key for NATS')
    .addOption(new Option('--lifecycle-format <format>', 'startup events as CloudEvents or in the legacy Choria format').choices(['cloudevents', 'choria']).default('cloudevents'))
    .option('--component <name>', 'lifecycle component while in provisioning mode', component, 'provision_mode_server')
    .option('--boot-rate <n>', 'servers booting per second (0: all at once)', nonNegativeInt, 0)
    .option('--latency <ms>', 'added before every reply', nonNegativeInt, 0)
    .option('--failure-rate <f>', 'fraction of RPCs answered with "simulated failure" (0 to 1)', fraction, 0)
    .option('--silent <n>', 'servers that never answer', nonNegativeInt, 0)
    .option('--server-version <v>', 'the servers\' version (inventory, startup events)', '0.29.4')
    .option('--upgradable', 'inventory says upgradable and the JWT allows release_update', false)
    .option('--fail-upgrades', 'release_update fails and rolls back', false)
    .option('--restart-delay <ms>', 'replaces the restart splay (2 s for splay 1)', nonNegativeInt)
    .option('--shutdown-delay <ms>', 'replaces the shutdown delay (0-9 s)', nonNegativeInt)
    .option('--jwt-key <file>', 'private key signing the provisioning JWT: PEM (ed25519 or RSA) or a 64-hex ed25519 seed; default a new key')
    .addOption(new Option('--jwt-key-type <type>', 'type of the generated JWT signing key').choices(['ed25519', 'rsa']).default('ed25519'))
    .option('--jwt-public-key-out <file>', 'write the JWT verification key (for the provisioner\'s jwt_verify_cert) to this file')
    .option('--per-node-keys', 'a new RSA key per gencsr and ed25519 key per gen25519, as real servers (slow for big fleets)', false)
    .option('--name-prefix <prefix>', 'identities are <prefix>-<n>.<domain>', 'node')
    .option('--domain <domain>', 'identities are <prefix>-<n>.<domain>', 'example.net')
    .option('--duration <s>', 'stop after this many seconds (default: run until a signal)', positiveInt)
    .option('--exit-when-provisioned', 'stop once every server is provisioned or shut down', false)
    .option('--report-every <ms>', 'progress line interval (0: none)', nonNegativeInt, 1000)
    .option('--json', 'report as JSON lines', false)
    .option('--seed <n>', 'seed the randomness (failures, splays) to repeat a run', wholeNumber)
    .option('--lock-window <ms>', 'how long a provisioning lock lasts (go-choria: 2 minutes)', positiveInt)
    .option('--trace', 'report every request a node receives: who asked (callerid), what, when', false)
    .option('--require-signed', 'servers whose provisioning JWT says chs: true: unsigned v1 requests, and signatures that do not verify against --ca, are dropped', false)
    .option('--ca <file>', 'the CA (PEM) a signed request\'s certificate must chain to (with --require-signed)')
    .addOption(new Option('--log-level <level>', 'log level (logs go to stderr)').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('warn'))
    .action(async (options: SimulateOptions, command: Command) => {
      if (options.requireSigned && options.ca === undefined) command.error('error: --require-signed needs --ca <file>: the CA that signed requests are verified against');
      // Loaded when the command runs, so other commands and --help do not pay for the fleet's crypto and NATS modules.
      const { runSimulate } = await import('../simulateRun.js');
      await runSimulate(options);
    });
}

