/**
 * What `rxfleet provision` opens before it connects: its pid file, its log file and its monitor
 * port. Upstream finds out only when it tries; rxfleet checks them first (here, for `validate` and
 * `provision` alike) and reports each as a configuration error naming the key.
 */
import { accessSync, closeSync, constants, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { ProvisionerConfig } from '../../lib/provision/config/config';
import { PreflightProblem, problemLine } from './preflight';

/** What is checked: the configuration, its file, and the flags that name a file or a port. */
export interface StartupResources {
  configFile: string;
  config: ProvisionerConfig;
  /** `--pid`. */
  pidFile?: string;
  /** Whether `--monitor` gave the port (else `monitor_port` did). */
  monitorFromFlag?: boolean;
}

function reason(error: unknown): string {
  const e = error as NodeJS.ErrnoException;
  const words: Record<string, string> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOENT: 'no such directory',
    ENOTDIR: 'a parent is not a directory',
    EISDIR: 'is a directory',
  };
  return e.code !== undefined ? `${words[e.code] ?? e.message} (${e.code})` : String(e.message ?? error);
}

/**
 * Why a file could not be written (appended to, or created), or `undefined`. An existing file is
 * opened for appending and closed, which changes nothing in it; a missing one needs a writable
 * directory: its parent, or with `mkdir` (as the logger makes them) the nearest that exists.
 */
export function writableProblem(file: string, options: { mkdir?: boolean } = {}): string | undefined {
  try {
    if (statSync(file).isDirectory()) return 'is a directory';
    closeSync(openSync(file, 'a'));
    return undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return reason(error);
  }
  let dir = dirname(file);
  for (;;) {
    try {
      if (!statSync(dir).isDirectory()) return `${dir} is not a directory`;
      accessSync(dir, constants.W_OK | constants.X_OK);
      return undefined;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' || options.mkdir !== true || dirname(dir) === dir) return `cannot create it in ${dir}: ${reason(error)}`;
      dir = dirname(dir);
    }
  }
}

/** Why nothing can listen on `port` (in use, or a privileged port), or `undefined`: a trial listen, closed at once. */
export async function portProblem(port: number, host?: string): Promise<string | undefined> {
  // Loaded when a port is checked: `validate` without a monitor port never needs it.
  const { createServer } = await import('node:net');
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => {
      const where = host === undefined ? `port ${port}` : `${host}:${port}`;
      if (error.code === 'EADDRINUSE') resolve(`${where} is in use by another process (EADDRINUSE)`);
      else if (error.code === 'EACCES')
        resolve(`${where} cannot be listened on by this user (EACCES: ports below 1024 need root or CAP_NET_BIND_SERVICE)`);
      else resolve(`cannot listen on ${where}: ${reason(error)}`);
    });
    server.listen(port, host, () => server.close(() => resolve(undefined)));
  });
}

/** The problem a failed listen at start is, as {@link startupProblems} words it; `undefined` for any other error. */
export function listenFailure(error: unknown, resources: StartupResources): string | undefined {
  const e = error as NodeJS.ErrnoException;
  if (e.syscall !== 'listen') return undefined;
  const { config } = resources;
  const where =
    config.rxfleet.monitorHost === undefined ? `port ${config.monitorPort}` : `${config.rxfleet.monitorHost}:${config.monitorPort}`;
  const message =
    e.code === 'EADDRINUSE'
      ? `${where} is in use by another process (EADDRINUSE)`
      : e.code === 'EACCES'
        ? `${where} cannot be listened on by this user (EACCES: ports below 1024 need root or CAP_NET_BIND_SERVICE)`
        : `cannot listen on ${where}: ${reason(e)}`;
  return problemLine({ ...monitorKey(resources), severity: 'error', message });
}

function monitorKey({ configFile, monitorFromFlag }: StartupResources): { file: string; path: string } {
  return monitorFromFlag === true ? { file: '--monitor', path: '--monitor' } : { file: configFile, path: 'monitor_port' };
}

/**
 * The log file (`logfile`), the pid file (`--pid`) and the monitor port (`monitor_port` or
 * `--monitor`) as `provision` will use them: each that cannot be written or listened on is an
 * error naming its key, so `validate` says what `provision` would fail on.
 */
export async function startupProblems(resources: StartupResources): Promise<PreflightProblem[]> {
  const { config, configFile, pidFile } = resources;
  const problems: PreflightProblem[] = [];
  const destination = config.logDestination;
  if (typeof destination === 'object') {
    const problem = writableProblem(destination.file, { mkdir: true });
    if (problem !== undefined)
      problems.push({ file: configFile, path: 'logfile', severity: 'error', message: `cannot write ${destination.file}: ${problem}` });
  }
  if (pidFile !== undefined) {
    const problem = writableProblem(pidFile);
    if (problem !== undefined)
      problems.push({ file: pidFile, path: '--pid', severity: 'error', message: `cannot write the pid file: ${problem}` });
  }
  if (config.monitorPort > 0) {
    const problem = await portProblem(config.monitorPort, config.rxfleet.monitorHost);
    if (problem !== undefined) problems.push({ ...monitorKey(resources), severity: 'error', message: problem });
  }
  return problems;
}

/** {@link startupProblems} as the lines `validate` and `provision` print. */
export async function startupLines(resources: StartupResources): Promise<string[]> {
  return (await startupProblems(resources)).map(problemLine);
}
