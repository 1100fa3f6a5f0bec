import { Command, InvalidArgumentError, Option } from 'commander';
import { readFileSync, writeFileSync } from 'node:fs';
import pino from 'pino';
import { LifecycleFormat, validateLifecycleComponent } from '../../lib/choria/lifecycle';
import { LogLevel, REDACTED_PATHS } from '../../lib/logger';
import { handleShutdownSignals } from '../../lib/shutdown';
import { JwtKeyType } from '../../lib/simulate/fleetKeys';
import { ReportFormat, eventLine, progressLine, readyLine, summaryLines } from '../../lib/simulate/fleetReport';
import { seededRandom } from '../../lib/simulate/seededRandom';
import { startSimulatedFleet } from '../../lib/simulate/simulatedFleet';
import { openNatsConnection } from '../../streams/natsConnection';
import { fraction, nonNegativeInt, positiveInt } from '../options';

interface SimulateOptions {
  nats: string[];
  nodes: number;
  token: string;
  user?: string;
  password?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  lifecycleFormat: LifecycleFormat;
  component: string;
  bootRate: number;
  latency: number;
  failureRate: number;
  silent: number;
  serverVersion: string;
  upgradable: boolean;
  failUpgrades: boolean;
  restartDelay?: number;
  shutdownDelay?: number;
  jwtKey?: string;
  jwtKeyType: JwtKeyType;
  jwtPublicKeyOut?: string;
  perNodeKeys: boolean;
  namePrefix: string;
  domain: string;
  duration?: number;
  exitWhenProvisioned: boolean;
  reportEvery: number;
  json: boolean;
  seed?: number;
  logLevel: LogLevel;
}

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
    .addOption(new Option('--log-level <level>', 'log level (logs go to stderr)').choices(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('warn'))
    .action(async (options: SimulateOptions) => {
      await runSimulate(options);
    });
}

async function runSimulate(options: SimulateOptions): Promise<void> {
  const format: ReportFormat = options.json ? 'json' : 'text';
  const print = (line: string): void => void process.stdout.write(`${line}\n`);
  const logger = pino({ level: options.logLevel, name: 'rxfleet-simulate', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, pino.destination({ dest: 2, sync: true }));
  const jwtSigningKey = options.jwtKey === undefined ? undefined : readFileSync(options.jwtKey, 'utf8');

  const tls = options.tlsCa !== undefined || options.tlsCert !== undefined || options.tlsKey !== undefined ? { ca: options.tlsCa, cert: options.tlsCert, key: options.tlsKey } : undefined;
  const connection = await openNatsConnection({ servers: options.nats, name: 'rxfleet-simulate', user: options.user, password: options.password, ...(tls !== undefined ? { tls } : {}) }, logger);

  const started = Date.now();
  const fleet = await startSimulatedFleet({
    nc: connection.nc,
    nodes: options.nodes,
    identity: (i) => `${options.namePrefix}-${i}.${options.domain}`,
    token: options.token,
    lifecycleFormat: options.lifecycleFormat,
    component: options.component,
    version: options.serverVersion,
    upgradable: options.upgradable,
    failUpgrades: options.failUpgrades,
    bootRate: options.bootRate,
    latencyMs: options.latency,
    failureRate: options.failureRate,
    silent: options.silent,
    ...(options.restartDelay !== undefined ? { restartDelayMs: options.restartDelay } : {}),
    ...(options.shutdownDelay !== undefined ? { shutdownDelayMs: options.shutdownDelay } : {}),
    jwt: { jwtKeyType: options.jwtKeyType, perNodeKeys: options.perNodeKeys, urls: options.nats, ...(jwtSigningKey !== undefined ? { jwtSigningKey } : {}) },
    ...(options.seed !== undefined ? { random: seededRandom(options.seed) } : {}),
    logger,
  });
  if (options.jwtPublicKeyOut !== undefined) writeFileSync(options.jwtPublicKeyOut, fleet.jwtVerifyKey.endsWith('\n') ? fleet.jwtVerifyKey : `${fleet.jwtVerifyKey}\n`);
  print(readyLine(format, { nodes: options.nodes, jwtVerifyKey: fleet.jwtVerifyKey, jwtKeyType: fleet.keys.jwtKeyType, servers: options.nats }));

  let finished = false;
  let resolveDone!: () => void;
  const done = new Promise<void>((resolve) => (resolveDone = resolve));
  const finish = async (): Promise<void> => {
    if (finished) return;
    finished = true;
    clearInterval(reporter);
    clearTimeout(deadline);
    await fleet.stop();
    for (const line of summaryLines(format, fleet.stats(), Date.now() - started)) print(line);
    await connection.drain();
    resolveDone();
  };

  const events = fleet.events$.subscribe((event) => {
    if (event.type === 'duplicate') print(eventLine(format, event));
    if (options.exitWhenProvisioned && (event.type === 'provisioned' || event.type === 'shutdown')) {
      const stats = fleet.stats();
      if (stats.provisioned + stats.shutdown === stats.nodes) void finish();
    }
  });
  const reporter = options.reportEvery > 0 ? setInterval(() => print(progressLine(format, fleet.stats(), Date.now() - started)), options.reportEvery) : undefined;
  const deadline = options.duration !== undefined ? setTimeout(() => void finish(), options.duration * 1000) : undefined;
  const removeSignals = handleShutdownSignals({ graceful: finish, logger, graceMs: 10_000 });

  await done;
  events.unsubscribe();
  removeSignals();
}
