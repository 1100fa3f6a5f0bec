import { rmSync, writeFileSync } from 'node:fs';
import { Logger } from '../../lib/logger';
import { redactUrlCredentials } from '../../lib/redact';
import { cleanUpOnExit } from '../../streams/exitCleanup';
import { handleShutdownSignals } from './shutdownSignals';
import { Daemon } from './contract';
import { notStarted } from './notStarted';

/** Options for {@link runDaemon}. */
export interface RunDaemonOptions {
  /** The command's name, in its own lines: `rxfleet <command>: not started: ...`. */
  command: string;
  /** The daemon's log: the signal and start-failure lines go here, and it is flushed before the process ends. */
  logger: Logger;
  /** `--pid`: written before the daemon starts (before it connects, as upstream), removed however the process ends. */
  pidFile?: string | undefined;
  /** How long a graceful stop may take before the process exits anyway with 1: the daemon's grace period and a margin. */
  backstopMs: number;
  /** Starts the daemon; a rejection means it did not start. */
  start(): Promise<Daemon>;
  /**
   * A start failure the configuration caused (a monitor port another process holds): its
   * `error: FILE: key: ...` line, printed as every configuration error is. Other failures are logged
   * and printed as `rxfleet <command>: <reason>`.
   */
  configurationError?(error: unknown): string | undefined;
  /** Ends the process; default `process.exit`. Specs pass their own. */
  exit?(code: number): void;
  /** The stop signals; default SIGINT and SIGTERM. Specs pass one nobody else listens to. */
  signals?: NodeJS.Signals[];
}

/**
 * Runs a daemon as a command, until a signal or until it stops by itself. The contract every
 * daemon command keeps:
 * - the pid file is written before the daemon starts and removed however the process ends short of
 *   SIGKILL; one that cannot be written is a configuration error (exit 1, nothing started);
 * - the first SIGINT or SIGTERM stops the daemon gracefully (DECISIONS P9) and exits 0; a second
 *   signal, or a stop that outlasts `backstopMs`, aborts the work in flight and exits 1; a signal
 *   while the daemon is still starting (connecting) exits at once;
 * - a daemon that stops by itself (its pipeline failed, its event stream ended) exits 1;
 * - a daemon that cannot start exits 1 with one line saying why;
 * - the log's last lines are flushed before the process ends, and whatever ends it (a crash, a
 *   second signal), the daemon's work in flight is aborted first, so no helper outlives it.
 * Resolves with the exit code when nothing was started; otherwise ends the process with `exit`.
 */
export async function runDaemon(options: RunDaemonOptions): Promise<number> {
  const { command, logger, pidFile, exit = (code: number) => process.exit(code) } = options;
  if (pidFile !== undefined) {
    try {
      writeFileSync(pidFile, `${process.pid}\n`, { mode: 0o644 });
    } catch (error) {
      return notStarted(command, [`error: ${pidFile}: --pid: cannot write the pid file: ${reason(error)}`]);
    }
  }
  const removePid = (): void => {
    if (pidFile !== undefined) rmSync(pidFile, { force: true });
  };
  let daemon: Daemon | undefined;
  // The backstop for an exit that skips the graceful stop: no helper may outlive the process.
  const forgetExitCleanup = cleanUpOnExit(() => {
    daemon?.abort('the process is exiting');
    removePid();
  });
  let resolveExit!: (code: number) => void;
  const exited = new Promise<number>((resolve) => (resolveExit = resolve));
  let ending: Promise<void> | undefined;
  const end = (code: number): Promise<void> =>
    (ending ??= (async () => {
      removeSignals();
      forgetExitCleanup();
      removePid();
      await flushed(logger);
      exit(code);
    })());
  const removeSignals = handleShutdownSignals({
    signals: options.signals,
    graceMs: options.backstopMs,
    logger,
    graceful: async () => {
      if (daemon !== undefined) await daemon.stop();
      // A signal while still starting: nothing was admitted, so nothing has to finish.
      else logger.info({ abandoned: 0 }, 'stopped');
    },
    exit: (code) => {
      if (code !== 0) daemon?.abort('exiting at once');
      resolveExit(code);
      // Still starting: the connect may wait for ever, so the process ends here.
      if (daemon === undefined) void end(code);
    },
  });

  try {
    daemon = await options.start();
  } catch (error) {
    removeSignals();
    forgetExitCleanup();
    removePid();
    const line = options.configurationError?.(error);
    if (line !== undefined) return notStarted(command, [line]);
    logger.fatal({ err: error }, `rxfleet ${command} could not start: ${reason(error)}`);
    await flushed(logger);
    process.stderr.write(`rxfleet ${command}: ${redactUrlCredentials(reason(error))}\n`);
    return 1;
  }
  void daemon.stopped.then((report) => {
    if (report.failed !== undefined) resolveExit(1);
  });
  const code = await exited;
  await end(code);
  return code;
}

// An error from another realm (a spec's fs) is no `instanceof Error`, and still has its message.
const reason = (error: unknown): string => (error as Error | undefined)?.message ?? String(error);

/** Resolves once the log's buffered lines are written, or after a second at most. */
function flushed(logger: Logger): Promise<void> {
  return new Promise((resolve) => {
    const fallback = setTimeout(resolve, 1000);
    fallback.unref();
    try {
      logger.flush(() => {
        clearTimeout(fallback);
        resolve();
      });
    } catch {
      clearTimeout(fallback);
      resolve();
    }
  });
}
