import { readFileSync, writeFileSync } from 'node:fs';
import pino from 'pino';
import type { LifecycleFormat } from '../lib/choria/lifecycle';
import { LogLevel, REDACTED_PATHS } from '../lib/logger';
import { handleShutdownSignals } from './shutdown';
import type { JwtKeyType } from '../lib/simulate/fleetKeys';
import { ReportFormat, eventLine, progressLine, readyLine, requestLine, summaryLines } from './fleetReport';
import { seededRandom } from '../lib/simulate/seededRandom';
import { RequestRecord, startSimulatedFleet } from '../streams/simulatedFleet';
import { openNatsConnection } from '../streams/natsConnection';

/** The options of `rxfleet simulate`, as commander parses them. */
export interface SimulateOptions {
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
  lockWindow?: number;
  trace: boolean;
  requireSigned: boolean;
  ca?: string;
  logLevel: LogLevel;
}

/**
 * Runs `rxfleet simulate`: connects, starts the fleet, prints a ready line, progress lines and
 * duplicates as they happen, and on a signal, `--duration` or `--exit-when-provisioned`, stops
 * and prints the summary. Reports go to stdout (JSON lines with `--json`), logs to stderr.
 */
export async function runSimulate(options: SimulateOptions): Promise<void> {
  const format: ReportFormat = options.json ? 'json' : 'text';
  const print = (line: string): void => void process.stdout.write(`${line}\n`);
  const logger = pino({ level: options.logLevel, name: 'rxfleet-simulate', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, pino.destination({ dest: 2, sync: true }));
  const jwtSigningKey = options.jwtKey === undefined ? undefined : readFileSync(options.jwtKey, 'utf8');
  const caPem = options.requireSigned && options.ca !== undefined ? readFileSync(options.ca, 'utf8') : undefined;

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
    ...(options.lockWindow !== undefined ? { lockWindowMs: options.lockWindow } : {}),
    ...(caPem !== undefined ? { requireSigned: { caPem } } : {}),
    ...(options.trace ? { onRequest: (request: RequestRecord) => print(requestLine(format, request)) } : {}),
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
