import { readFileSync, writeFileSync } from 'node:fs';
import type { LifecycleFormat } from '../lib/choria/lifecycle';
import { createLogger } from '../streams/logOutput';
import { redactUrlCredentials } from '../lib/redact';
import { handleShutdownSignals } from './daemon/shutdownSignals';
import type { JwtKeyType } from '../lib/simulate/fleetKeys';
import { ReportFormat, eventLine, progressLine, readyLine, requestLine, summaryLines } from './fleetReport';
import { seededRandom } from '../lib/simulate/seededRandom';
import { RequestRecord, startSimulatedFleet } from '../streams/simulate/simulatedFleet';
import { FleetConnection, openNatsConnection } from '../streams/natsConnection';
import { NatsServerProcess, natsServerAvailable, startNatsServer } from '../streams/natsServerProcess';
import { LogFlags, NatsFlags, logSettings, natsServers } from './options';
import { definedFields } from '../lib/definedFields';

/** The options of `rxfleet simulate`, as commander parses them (durations in milliseconds). */
export interface SimulateOptions extends NatsFlags, LogFlags {
  nodes: number;
  token: string;
  lifecycleFormat: LifecycleFormat;
  component: string;
  bootRate: number;
  latency: number;
  failureRate: number;
  silent: number;
  serverVersion: string;
  upgradable?: boolean;
  failUpgrades?: boolean;
  restartDelay?: number;
  shutdownDelay?: number;
  jwtKey?: string;
  jwtKeyType: JwtKeyType;
  jwtPublicKeyOut?: string;
  perNodeKeys?: boolean;
  namePrefix: string;
  domain: string;
  duration?: number;
  exitWhenProvisioned?: boolean;
  reportEvery: number;
  json?: boolean;
  seed?: number;
  lockWindow?: number;
  trace?: boolean;
  requireSigned?: boolean;
  ca?: string;
}

/** What `simulate` says when it has no server and cannot start one. */
export const NO_NATS_SERVER =
  'rxfleet simulate: no --nats given and nats-server is not on PATH to start a private one: install it (apt-get install nats-server) or pass --nats nats://host:4222';

/**
 * Runs `rxfleet simulate`: connects (to `--nats`, or to a private nats-server it starts on a free
 * loopback port when none is given), starts the fleet, prints a ready line, progress lines and
 * duplicates as they happen, and on a signal, `--duration` or `--exit-when-provisioned`, stops,
 * prints the summary, and stops the private server (whose directory goes with it, however the
 * process ends). Reports go to stdout (JSON lines with `--json`), logs to stderr. Resolves with
 * the exit code.
 */
export async function runSimulate(options: SimulateOptions): Promise<number> {
  const format: ReportFormat = options.json === true ? 'json' : 'text';
  const print = (line: string): void => void process.stdout.write(`${line}\n`);
  const { level, format: logFormat } = logSettings(options, 'warn');
  const logger = createLogger({
    level,
    ...definedFields({ format: logFormat }),
    destination: 'stderr',
    name: 'rxfleet-simulate',
  });
  const jwtSigningKey = options.jwtKey === undefined ? undefined : readFileSync(options.jwtKey, 'utf8');

  let privateServer: NatsServerProcess | undefined;
  let connection: FleetConnection | undefined;
  const abandon = new AbortController();
  // A signal before the fleet runs (the broker still unreachable): stop at once, leave nothing.
  let finish: () => Promise<void> = async () => {
    abandon.abort();
    await privateServer?.stop();
  };
  const removeSignals = handleShutdownSignals({ graceful: () => finish(), logger, graceMs: 10_000 });
  try {
    let { servers } = natsServers(options);
    if (servers.length === 0) {
      if (!natsServerAvailable()) {
        process.stderr.write(`${NO_NATS_SERVER}\n`);
        return 1;
      }
      privateServer = await startNatsServer({ jetstream: false });
      servers = [privateServer.url];
      process.stderr.write(
        `rxfleet simulate: no --nats given: started a private nats-server on ${privateServer.url} (it stops with this command)\n`,
      );
    }
    const { user, password } = natsServers(options);
    const tls =
      options.natsCa !== undefined || options.natsCert !== undefined || options.natsKey !== undefined
        ? { ca: options.natsCa, cert: options.natsCert, key: options.natsKey }
        : undefined;
    connection = await openNatsConnection(
      {
        servers,
        name: 'rxfleet-simulate',
        user,
        password,
        token: options.natsToken,
        credentials: options.natsCreds,
        signal: abandon.signal,
        ...definedFields({ tls }),
      },
      logger,
    );
    return await runFleet(options, {
      servers,
      connection,
      logger,
      print,
      format,
      jwtSigningKey,
      setFinish: (f) => (finish = f),
      privateServer,
    });
  } catch (error) {
    if (abandon.signal.aborted) return 0;
    await connection?.drain();
    await privateServer?.stop();
    process.stderr.write(`${redactUrlCredentials(`rxfleet simulate: ${(error as Error).message}`)}\n`);
    return 1;
  } finally {
    removeSignals();
  }
}

interface FleetRun {
  servers: string[];
  connection: FleetConnection;
  logger: ReturnType<typeof createLogger>;
  print: (line: string) => void;
  format: ReportFormat;
  jwtSigningKey: string | undefined;
  setFinish: (finish: () => Promise<void>) => void;
  privateServer: NatsServerProcess | undefined;
}

async function runFleet(options: SimulateOptions, run: FleetRun): Promise<number> {
  const { servers, connection, logger, print, format, jwtSigningKey, privateServer } = run;
  const caPem = options.requireSigned === true && options.ca !== undefined ? readFileSync(options.ca, 'utf8') : undefined;
  const started = Date.now();
  const fleet = await startSimulatedFleet({
    nc: connection.nc,
    nodes: options.nodes,
    identity: (i) => `${options.namePrefix}-${i}.${options.domain}`,
    token: options.token,
    lifecycleFormat: options.lifecycleFormat,
    component: options.component,
    version: options.serverVersion,
    upgradable: options.upgradable === true,
    failUpgrades: options.failUpgrades === true,
    bootRate: options.bootRate,
    latencyMs: options.latency,
    failureRate: options.failureRate,
    silent: options.silent,
    ...definedFields({ restartDelayMs: options.restartDelay, shutdownDelayMs: options.shutdownDelay }),
    jwt: {
      jwtKeyType: options.jwtKeyType,
      perNodeKeys: options.perNodeKeys === true,
      urls: servers,
      ...definedFields({ jwtSigningKey }),
    },
    ...(options.seed !== undefined ? { random: seededRandom(options.seed) } : {}),
    ...definedFields({ lockWindowMs: options.lockWindow }),
    ...(caPem !== undefined ? { requireSigned: { caPem } } : {}),
    ...(options.trace === true ? { onRequest: (request: RequestRecord) => print(requestLine(format, request)) } : {}),
    logger,
  });
  if (options.jwtPublicKeyOut !== undefined)
    writeFileSync(options.jwtPublicKeyOut, fleet.jwtVerifyKey.endsWith('\n') ? fleet.jwtVerifyKey : `${fleet.jwtVerifyKey}\n`);
  print(readyLine(format, { nodes: options.nodes, jwtVerifyKey: fleet.jwtVerifyKey, jwtKeyType: fleet.keys.jwtKeyType, servers }));

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
    await privateServer?.stop();
    resolveDone();
  };
  run.setFinish(finish);

  const events = fleet.events$.subscribe((event) => {
    if (event.type === 'duplicate' || event.type === 'configured-by-two') print(eventLine(format, event));
    if (options.exitWhenProvisioned === true && (event.type === 'provisioned' || event.type === 'shutdown')) {
      const stats = fleet.stats();
      if (stats.provisioned + stats.shutdown === stats.nodes) void finish();
    }
  });
  const reporter =
    options.reportEvery > 0
      ? setInterval(() => print(progressLine(format, fleet.stats(), Date.now() - started)), options.reportEvery)
      : undefined;
  const deadline = options.duration !== undefined ? setTimeout(() => void finish(), options.duration) : undefined;

  await done;
  events.unsubscribe();
  return 0;
}
