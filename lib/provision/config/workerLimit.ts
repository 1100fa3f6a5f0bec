import { ConfigProblem } from './config';

/** What the machine lets one process run at once. */
export interface MachineLimits {
  cpus: number;
  /** The process's soft limit on open files (`ulimit -n`); undefined when unknown. */
  openFiles?: number;
  /** The user's soft limit on processes (`ulimit -u`); undefined when unknown or unlimited. */
  processes?: number;
}

/**
 * Descriptors one running helper holds in the daemon: stdin, stdout and stderr (the supervisor's pipe
 * and marker are one each, shared by every helper: they are in the reserve).
 */
export const DESCRIPTORS_PER_HELPER = 3;
/** Descriptors the daemon needs besides its helpers: NATS, the endpoint, logs, DNS, Node's own. */
export const DESCRIPTORS_RESERVED = 128;
/** More helpers at once per CPU than this only queue for the CPU: each starts a process. */
export const HELPERS_PER_CPU = 128;

/**
 * Warnings for a `workers` setting past what this machine can run: each worker may run one helper
 * process at once, so `workers` helpers at once must fit the open-files limit (3 descriptors each,
 * beside the daemon's own), the process limit, and a sane share of the CPUs (beyond 128 per CPU, or
 * 256 on a small machine, they only wait for each other and nodes time out). The daemon starts
 * anyway: these are warnings, as the file is valid.
 */
export function workerLimitProblems(workers: number, limits: MachineLimits): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const warn = (message: string): void => void problems.push({ path: 'workers', message, severity: 'warning' });
  const helpers = `${workers} helper processes may run at once`;
  if (limits.openFiles !== undefined) {
    const most = Math.floor((limits.openFiles - DESCRIPTORS_RESERVED) / DESCRIPTORS_PER_HELPER);
    if (workers > most)
      warn(
        `${helpers}, each holding ${DESCRIPTORS_PER_HELPER} open files in the daemon, but this process may open ${limits.openFiles} (ulimit -n): at most ${Math.max(0, most)} helpers fit; the rest will fail to start`,
      );
  }
  if (limits.processes !== undefined && workers > limits.processes)
    warn(`${helpers}, but this user may run ${limits.processes} processes (ulimit -u): the rest will fail to start`);
  const cpuBound = Math.max(256, HELPERS_PER_CPU * limits.cpus);
  if (workers > cpuBound)
    warn(
      `${helpers} on ${limits.cpus} CPU${limits.cpus === 1 ? '' : 's'}: past about ${cpuBound} they only wait for each other, and nodes time out; upstream's default is one worker per CPU`,
    );
  return problems;
}
