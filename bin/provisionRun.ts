import { existsSync, rmSync, writeFileSync } from 'node:fs';
import pino from 'pino';
import { ChoriaConfigProblem, ChoriaConfigResult, parseChoriaClientConfig } from '../lib/choria/clientConfig';
import { defaultChoriaConfigPath, hostFqdn, loadChoriaClientConfig } from '../streams/choria/clientConfigFile';
import { Logger, REDACTED_PATHS, createLogger } from '../lib/logger';
import { ConfigProblem, ProvisionerConfig } from '../lib/provision/config';
import { loadProvisionerConfig } from '../streams/provisionerConfigFile';
import { connectionPlan } from '../streams/choria/connectionPlan';
import { ProvisionerDaemon, startProvisioner } from './provision/daemon';
import { handleShutdownSignals } from './shutdown';
import { applyDaemonHeapPolicy } from './provision/heapPolicy';

/** The options of `rxfleet provision`, as commander parses them. */
export interface ProvisionOptions {
  config: string;
  /** rxfleet's version, for the startup event (the command's own, read once by the bin). */
  version: string;
  choriaConfig?: string;
  pid?: string;
  debug: boolean;
  pretty?: boolean;
}

/** One line per problem, as `rxfleet validate` prints them. */
function line(problem: ConfigProblem | ChoriaConfigProblem, file: string): string {
  const where = problem.path === file || problem.path.startsWith(`${file}:`) ? problem.path : `${file}: ${problem.path}`;
  return `${problem.severity}: ${where}: ${problem.message}`;
}

function daemonLogger(config: ProvisionerConfig, options: ProvisionOptions): Logger {
  const level = options.debug ? 'debug' : config.logLevel;
  const destination = config.logDestination;
  if (destination === 'discard') return createLogger({ level: 'silent' });
  if (destination === 'stderr') return pino({ level, name: 'rxfleet-provision', redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, pino.destination({ dest: 2, sync: true }));
  return createLogger({ level, name: 'rxfleet-provision', ...(options.pretty !== undefined ? { pretty: options.pretty } : {}), ...(typeof destination === 'object' ? { file: destination.file } : {}) });
}

/**
 * Runs `rxfleet provision` until a signal: reads both configurations and refuses to start on any
 * error (every problem printed, one line each, exit 1); starts the daemon; writes the pid file;
 * on the first SIGINT/SIGTERM stops discovery and admission and lets in-flight nodes finish within
 * `rxfleet.shutdown_grace` before exiting 0; a second signal exits at once (DECISIONS P9).
 * Resolves with the exit code when it returns rather than exits.
 */
export async function runProvision(options: ProvisionOptions): Promise<number> {
  const provisioner = loadProvisionerConfig(options.config);
  const problems: string[] = provisioner.problems.map((p) => line(p, options.config));

  let choria: ChoriaConfigResult;
  const choriaFile = options.choriaConfig ?? defaultChoriaConfigPath();
  if (options.choriaConfig !== undefined || existsSync(choriaFile)) {
    choria = await loadChoriaClientConfig(choriaFile);
    problems.push(...choria.problems.map((p) => line(p, choriaFile)));
  } else {
    choria = parseChoriaClientConfig('', { defaultIdentity: await hostFqdn() });
    problems.push(`warning: ${choriaFile}: no Choria client configuration found at the default locations; using defaults (pass --choria-config)`);
  }
  if (provisioner.config !== undefined) problems.push(...connectionPlan(provisioner.config, choria.config).problems.map((p) => line(p, options.choriaConfig ?? choriaFile)));

  const errors = problems.filter((p) => p.startsWith('error:'));
  if (errors.length > 0 || provisioner.config === undefined) {
    for (const problem of problems) process.stderr.write(`${problem}\n`);
    process.stderr.write(`rxfleet provision: not started: ${errors.length} configuration error${errors.length === 1 ? '' : 's'}\n`);
    return 1;
  }
  const config = provisioner.config;
  const logger = daemonLogger(config, options);
  for (const warning of problems) logger.warn(warning.replace(/^warning: /, ''));

  let daemon: ProvisionerDaemon | undefined;
  const removePid = (): void => {
    if (options.pid !== undefined) rmSync(options.pid, { force: true });
  };
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  const removeHandlers = handleShutdownSignals({
    // The daemon enforces the grace period itself and exits cleanly after it; this is the backstop.
    graceMs: config.rxfleet.shutdownGraceMs + 15_000,
    logger,
    graceful: async () => {
      if (daemon !== undefined) await daemon.stop();
      removePid();
    },
    exit: (code) => {
      // Exiting at once (a second signal, or the backstop): no helper may outlive the process.
      if (code !== 0) daemon?.abort('exiting at once');
      removePid();
      // A signal while still connecting: nothing runs yet, and the connect would wait for ever.
      if (daemon === undefined) process.exit(code);
      resolveExit(code);
    },
  });

  try {
    applyDaemonHeapPolicy(logger);
    daemon = await startProvisioner({ config, choria: choria.config, logger, version: options.version });
  } catch (error) {
    removeHandlers();
    logger.fatal({ err: error }, `Provisioning could not start: ${(error as Error).message}`);
    process.stderr.write(`rxfleet provision: ${(error as Error).message}\n`);
    return 1;
  }
  if (options.pid !== undefined) writeFileSync(options.pid, `${process.pid}\n`, { mode: 0o644 });
  void daemon.stopped.then((report) => {
    if (report.failed === undefined) return;
    removePid();
    resolveExit(1);
  });
  const code = await exited;
  removeHandlers();
  logger.flush?.();
  if (code !== 0) process.exit(code);
  return code;
}
