import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';

/** The crash fixture: `node --require` it, then SIGUSR2 throws an uncaught exception in the process. */
export const CRASH_ON_SIGNAL = resolve(__dirname, '../fixtures/crashOnSignal.cjs');

/**
 * An environment variable every process a command starts inherits (nats-server, helpers), so what
 * it left behind can be found among the machine's processes however it was started or re-parented,
 * while other suites run their own.
 */
export function processMarker(): { name: string; value: string; env: NodeJS.ProcessEnv } {
  const value = randomUUID();
  return { name: 'RXFLEET_SPEC_MARKER', value, env: { RXFLEET_SPEC_MARKER: value } };
}

/** The pids and command lines of live processes whose environment carries the marker. */
export function markedProcesses(marker: { name: string; value: string }): string[] {
  const needle = `${marker.name}=${marker.value}`;
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8');
      if (!environ.split('\0').includes(needle)) continue;
      // A zombie has no command line; it is gone as soon as its parent reaps it.
      const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      if (state === 'Z') continue;
      found.push(`${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim()}`);
    } catch {
      // It ended while being looked at, or is not ours to read.
    }
  }
  return found;
}
