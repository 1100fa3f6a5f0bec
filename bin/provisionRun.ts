import { rmSync, writeFileSync } from 'node:fs';
import type { EnricherSettings } from '../lib/enricher/config/config';
import { createLogger } from '../streams/logOutput';
import { redactUrlCredentials } from '../lib/redact';
import { cleanUpOnExit } from '../streams/exitCleanup';
import { IncusFlags, LogFlags, logSettings } from './options';
import { ProvisionerDaemon, startProvisioner } from './provision/daemon';
import { preflight } from './provision/preflight';
import { StartupResources, listenFailure, startupLines } from './provision/startupFiles';
import { ProvisionFlags, provisionSources } from './provisionSources';
import { handleShutdownSignals } from './shutdown';
import { applyDaemonHeapPolicy } from './provision/heapPolicy';

/** The options of `rxfleet provision`, as commander parses them. */
export interface ProvisionOptions extends ProvisionFlags, LogFlags {
  /** rxfleet's version, for the startup event (the command's own, read once by the bin). */
  version: string;
  pid?: string;
}

/** `rxfleet provision-incus`: the enricher's settings, beside the provisioner's. */
export interface EnricherFlags extends IncusFlags {
  /** The enricher's configuration file (`rxfleet enrich --config`). */
  enrichConfig?: string;
  dataDir?: string;
}

/** The enricher's settings from its flags, or every problem as a line (`error: ...`). */
async function enricherSettings(flags: EnricherFlags): Promise<{ settings?: EnricherSettings; lines: string[] }> {
  // Loaded only for provision-incus, so `provision` does not pay for the enricher's modules.
  const { loadEnrichSettings } = await import('./enrich/commandLine.js');
  const { EnricherConfigError } = await import('../lib/enricher/config/config.js');
  try {
    const { settings, warnings } = loadEnrichSettings(
      {
        ...(flags.enrichConfig !== undefined ? { config: flags.enrichConfig } : {}),
        ...(flags.incus !== undefined ? { incus: flags.incus } : {}),
        ...(flags.clientCert !== undefined ? { clientCert: flags.clientCert } : {}),
        ...(flags.clientKey !== undefined ? { clientKey: flags.clientKey } : {}),
        ...(flags.serverCert !== undefined ? { serverCert: flags.serverCert } : {}),
        ...(flags.serverFingerprint !== undefined ? { serverFingerprint: flags.serverFingerprint } : {}),
        ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}),
      },
      { outputRequired: false },
    );
    return { settings, lines: warnings.map((w) => `warning: ${w}`) };
  } catch (error) {
    if (!(error instanceof EnricherConfigError)) throw error;
    return { lines: error.problems.map((p) => redactUrlCredentials(`error: ${p}`)) };
  }
}

/**
 * Runs `rxfleet provision` until a signal: runs the {@link preflight} checks `rxfleet validate`
 * runs and refuses to start on any error (every problem printed, one line each, exit 1); logs the
 * warnings; writes the pid file (before connecting, as upstream; the pid file, the log file and the
 * monitor port are checked first, each a configuration error naming its key); starts the daemon; on the first SIGINT/SIGTERM stops discovery
 * and admission and lets in-flight nodes finish within `rxfleet.shutdown_grace` before exiting 0;
 * a second signal exits at once (DECISIONS P9). However the process ends short of SIGKILL (a
 * second signal, a crash), the helpers in flight are killed and the pid file removed.
 * Resolves with the exit code when it returns rather than exits.
 *
 * With `withEnricher` it is `rxfleet provision-incus`: the enricher's settings are checked too
 * (every problem of both printed before anything starts), and the enricher runs in the same
 * process feeding the provisioner ({@link startProvisionerWithEnricher}); a signal stops both.
 */
export async function runProvision(options: ProvisionOptions, withEnricher?: EnricherFlags): Promise<number> {
  const command = withEnricher === undefined ? 'provision' : 'provision-incus';
  const sources = provisionSources(options);
  const checked = await preflight(sources);
  const enrich = withEnricher === undefined ? undefined : await enricherSettings(withEnricher);
  const resources: StartupResources | undefined =
    checked.config === undefined
      ? undefined
      : {
          configFile: options.config,
          config: checked.config,
          pidFile: options.pid,
          monitorFromFlag: sources.overrides?.monitor !== undefined,
        };
  // The pid file, log file and monitor port too: what would fail later fails here, named.
  const problems = [...checked.lines, ...(enrich?.lines ?? []), ...(resources !== undefined ? await startupLines(resources) : [])];
  const notStarted = (lines: string[]): number => {
    const errors = lines.filter((line) => line.startsWith('error: ')).length;
    for (const line of lines) process.stderr.write(`${line}\n`);
    process.stderr.write(`rxfleet ${command}: not started: ${errors} configuration error${errors === 1 ? '' : 's'}\n`);
    return 1;
  };
  const errors = problems.filter((line) => line.startsWith('error: ')).length;
  if (checked.config === undefined || resources === undefined || errors > 0 || (enrich !== undefined && enrich.settings === undefined))
    return notStarted(problems);
  const config = checked.config;
  // Written before the first connection, as upstream writes it first.
  if (options.pid !== undefined) {
    try {
      writeFileSync(options.pid, `${process.pid}\n`, { mode: 0o644 });
    } catch (error) {
      return notStarted([`error: ${options.pid}: --pid: cannot write the pid file: ${(error as Error).message}`]);
    }
  }
  const { level, format } = logSettings(options, config.logLevel);
  let logger: ReturnType<typeof createLogger>;
  try {
    logger = createLogger({
      level,
      format: format ?? config.rxfleet.logFormat,
      destination: config.logDestination,
      name: `rxfleet-${command}`,
    });
  } catch (error) {
    if (options.pid !== undefined) rmSync(options.pid, { force: true });
    return notStarted([`error: ${options.config}: logfile: ${(error as Error).message}`]);
  }
  // The same lines `rxfleet validate` prints, without their severity: the log level says it.
  for (const line of problems) logger.warn(line.replace(/^warning: /, ''));

  let daemon: ProvisionerDaemon | undefined;
  const removePid = (): void => {
    if (options.pid !== undefined) rmSync(options.pid, { force: true });
  };
  // The backstop for an exit that skips the graceful stop: no helper may outlive the process.
  const forgetExitCleanup = cleanUpOnExit(() => {
    daemon?.abort('the process is exiting');
    removePid();
  });
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  const removeHandlers = handleShutdownSignals({
    // The daemon enforces the grace period itself and exits cleanly after it; this is the backstop.
    graceMs: config.rxfleet.shutdownGraceMs + 15_000,
    logger,
    graceful: async () => {
      if (daemon !== undefined) await daemon.stop();
      // A signal while still connecting: nothing was admitted, so nothing has to finish.
      else logger.info({ abandoned: 0 }, 'stopped');
      removePid();
    },
    exit: (code) => {
      // Exiting at once (a second signal, or the backstop): no helper may outlive the process.
      if (code !== 0) daemon?.abort('exiting at once');
      removePid();
      // A signal while still connecting: nothing runs yet, and the connect would wait for ever.
      if (daemon === undefined) {
        logger.flush?.();
        process.exit(code);
      }
      resolveExit(code);
    },
  });

  try {
    applyDaemonHeapPolicy(logger);
    const daemonOptions = { config, choria: checked.choria, logger, version: options.version };
    if (enrich?.settings === undefined) daemon = await startProvisioner(daemonOptions);
    else {
      const { startProvisionerWithEnricher } = await import('./provision/withEnricher.js');
      daemon = await startProvisionerWithEnricher(daemonOptions, enrich.settings);
    }
  } catch (error) {
    removeHandlers();
    forgetExitCleanup();
    removePid();
    const listen = listenFailure(error, resources);
    if (listen !== undefined) return notStarted([listen]);
    logger.fatal({ err: error }, `Provisioning could not start: ${(error as Error).message}`);
    process.stderr.write(`rxfleet ${command}: ${redactUrlCredentials((error as Error).message)}\n`);
    return 1;
  }
  void daemon.stopped.then((report) => {
    if (report.failed === undefined) return;
    removePid();
    resolveExit(1);
  });
  const code = await exited;
  removeHandlers();
  forgetExitCleanup();
  logger.flush?.();
  if (code !== 0) process.exit(code);
  return code;
}
