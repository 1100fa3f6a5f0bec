/**
 * The machine's load around a benchmark, shared by every bench in this directory. A figure is only
 * as good as its machine: on a machine busy with other work a rate falls, and the figure says
 * little about rxfleet. So each bench prints the load average at its start and its end, and every
 * figure it prints is marked when the machine was busy at the start (the 1-minute load above
 * BUSY_LOAD_PER_CORE, 0.5 by default, per core): `"machine_busy": true` and a note saying not to
 * publish it. The end's load includes the bench's own work, so only the start decides; the end is
 * printed for the reader. Ratios to a baseline measured in the same run stay meaningful either way.
 */
import { availableParallelism, loadavg } from 'node:os';

/** Above this 1-minute load per core at the start, the machine is busy. */
export const BUSY_LOAD_PER_CORE = Number(process.env.BUSY_LOAD_PER_CORE ?? 0.5);

/** The load average now. */
export interface MachineLoad {
  load1: number;
  load5: number;
  load15: number;
  cores: number;
  /** The 1-minute load per core. */
  perCore: number;
}

const round = (n: number): number => Math.round(n * 100) / 100;

/** The load average and the number of cores, now. */
export function machineLoad(): MachineLoad {
  const [load1, load5, load15] = loadavg();
  const cores = availableParallelism();
  return { load1: round(load1), load5: round(load5), load15: round(load15), cores, perCore: round(load1 / cores) };
}

/** A bench's output: figures as JSON lines, marked when the machine was busy. */
export interface BenchOutput {
  /** Whether the machine was busy at the start. */
  readonly busy: boolean;
  /** Prints one JSON line; a line with a `figure` is marked when the machine was busy. */
  print(line: Record<string, unknown>): void;
  /** Prints the load at the end. Idempotent. */
  end(): void;
}

/**
 * Starts a bench's output: prints `{"figure":"load average","at":"start",...}` at once, and
 * `at: "end"` on {@link BenchOutput.end} or, failing that, when the process exits.
 */
export function benchOutput(bench: string, write: (line: string) => void = (line) => console.log(line)): BenchOutput {
  const start = machineLoad();
  const busy = start.perCore > BUSY_LOAD_PER_CORE;
  const emit = (line: Record<string, unknown>): void => write(JSON.stringify(line));
  emit({ figure: 'load average', bench, at: 'start', ...start, busy, busy_above_per_core: BUSY_LOAD_PER_CORE });
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    emit({ figure: 'load average', bench, at: 'end', ...machineLoad(), busy_at_start: busy });
  };
  process.once('exit', end);
  const note = `measured on a busy machine (1-minute load ${start.load1} on ${start.cores} cores at the start): compare it with its baseline from the same run, do not publish it`;
  return {
    busy,
    print(line) {
      emit(busy && 'figure' in line ? { ...line, machine_busy: true, note } : line);
    },
    end,
  };
}
