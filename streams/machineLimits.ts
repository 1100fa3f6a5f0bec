import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { MachineLimits } from '../lib/provision/config/workerLimit';

/**
 * This process's limits: the CPUs it may use, and its soft limits on open files and processes from
 * `/proc/self/limits` (Linux); a limit that is unknown or unlimited is left out.
 */
export function machineLimits(limitsFile = '/proc/self/limits'): MachineLimits {
  const limits: MachineLimits = { cpus: availableParallelism() };
  let text: string;
  try {
    text = readFileSync(limitsFile, 'utf8');
  } catch {
    return limits;
  }
  const soft = (name: string): number | undefined => {
    const value = new RegExp(`^${name}\\s+(\\S+)`, 'm').exec(text)?.[1];
    return value === undefined || !/^\d+$/.test(value) ? undefined : Number(value);
  };
  const openFiles = soft('Max open files');
  const processes = soft('Max processes');
  if (openFiles !== undefined) limits.openFiles = openFiles;
  if (processes !== undefined) limits.processes = processes;
  return limits;
}
