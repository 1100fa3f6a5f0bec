import { readFileSync, writeFileSync } from 'node:fs';
import { RxfleetProcess, startRxfleet } from '../../../spec/helpers/rxfleetProcess';

/** Every process a scenario started, so an interrupted run (Ctrl-C, a timeout) leaves none behind. */
const children = new Set<RxfleetProcess>();
const cleanUps = new Set<() => Promise<void>>();

/** `rxfleet ...args` (the built command), tracked for clean-up; its stdout is always read. */
export function rxfleet(args: string[], env?: Record<string, string | undefined>): RxfleetProcess {
  // DAEMON_NODE_ARGS (as in bench:provision) reaches every rxfleet process a scenario starts, e.g.
  // `--cpu-prof --cpu-prof-dir=/tmp/p` to see where a daemon's time goes under the scenario.
  const nodeArgs = (process.env.DAEMON_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  const child = startRxfleet(args, { ...(env === undefined ? {} : { env }), nodeArgs });
  children.add(child);
  void child.exited.then(() => children.delete(child));
  return child;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. */
export async function stopProcess(child: RxfleetProcess, graceMs = 30_000): Promise<void> {
  if (child.running()) child.child.kill('SIGTERM');
  const killer = setTimeout(() => child.child.kill('SIGKILL'), graceMs);
  await child.exited;
  clearTimeout(killer);
}

/** Runs `fn` when the run ends however it ends (servers, directories). */
export function onCleanUp(fn: () => Promise<void>): () => void {
  cleanUps.add(fn);
  return () => cleanUps.delete(fn);
}

/** Kills every tracked process and runs every clean-up. */
export async function cleanUpAll(): Promise<void> {
  for (const child of children) if (child.running()) child.child.kill('SIGKILL');
  await Promise.all([...children].map((c) => c.exited));
  for (const fn of [...cleanUps].reverse()) await fn().catch(() => undefined);
  cleanUps.clear();
}

/** Peak resident set (VmHWM) of a running process, MiB; undefined once it is gone. */
export function peakRssMiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return hwm === null ? undefined : Math.round(Number(hwm[1]) / 102.4) / 10;
  } catch {
    return undefined;
  }
}

/**
 * Starts a process's peak resident set (VmHWM) again from its resident set now (Linux's
 * `clear_refs` 5), so that a later {@link peakRssMiB} is the peak of what came after. False when
 * the kernel refused (a process of another user, a kernel before 4.0).
 */
export function resetPeakRss(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
export const now = (): number => Date.now();

/** CPU seconds (user + system) a running process has used so far; undefined once it is gone. */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in 1/100 s.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}
