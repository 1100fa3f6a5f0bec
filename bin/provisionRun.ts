import { rmSync, writeFileSync } from 'node:fs';
import { createLogger } from '../lib/logger';
import { redactUrlCredentials } from '../lib/redact';
import { cleanUpOnExit } from '../streams/exitCleanup';
import { LogFlags, logSettings } from './options';
import { ProvisionerDaemon, startProvisioner } from './provision/daemon';
import { preflight } from './provision/preflight';
import { ProvisionFlags, provisionSources } from './provisionSources';
import { handleShutdownSignals } from './shutdown';
import { applyDaemonHeapPolicy } from './provision/heapPolicy';

/** The options of `rxfleet provision`, as commander parses them. */
export interface ProvisionOptions extends ProvisionFlags, LogFlags {
  /** rxfleet's version, for the startup event (the command's own, read once by the bin). */
  version: string;
  pid?: string;
}

/**
 * Runs `rxfleet provision` until a signal: runs the {@link preflight} checks `rxfleet validate`
 * runs and refuses to start on any error (every problem printed, one line each, exit 1); logs the
 * warnings; starts the daemon; writes the pid file; on the first SIGINT/SIGTERM stops discovery
 * and admission and lets in-flight nodes finish within `rxfleet.shutdown_grace` before exiting 0;
 * a second signal exits at once (DECISIONS P9). However the process ends short of SIGKILL (a
 * second signal, a crash), the helpers in flight are killed and the pid file removed.
 * Resolves with the exit code when it returns rather than exits.
 */
export async function runProvision(options: ProvisionOptions): Promise<number> {
  const checked = await preflight(provisionSources(options));
  if (checked.config === undefined) {
    for (const line of checked.lines) process.stderr.write(`${line}\n`);
    process.stderr.write(`rxfleet provision: not started: ${checked.errors} configuration error${checked.errors === 1 ? '' : 's'}\n`);
    return 1;
  }
  const config = checked.config;
  const { level, format } = logSettings(options, config.logLevel);
  const logger = createLogger({ level, format: format ?? config.rxfleet.logFormat, destination: config.logDestination, name: 'rxfleet-provision' });
  // The same lines `rxfleet validate` prints, without their severity: the log level says it.
  for (const line of checked.lines) logger.warn(line.replace(/^warning: /, ''));

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
    daemon = await startProvisioner({ config, choria: checked.choria, logger, version: options.version });
  } catch (error) {
    removeHandlers();
    forgetExitCleanup();
    logger.fatal({ err: error }, `Provisioning could not start: ${(error as Error).message}`);
    process.stderr.write(`rxfleet provision: ${redactUrlCredentials((error as Error).message)}\n`);
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
  forgetExitCleanup();
  logger.flush?.();
  if (code !== 0) process.exit(code);
  return code;
}
