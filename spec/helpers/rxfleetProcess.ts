import { ChildProcess, spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

/** The built command (`npm test` and the benchmarks build first), run as a user runs it. */
export const RXFLEET_BIN = join(resolve(__dirname, '../..'), 'dist/bin/rxfleet.js');

/** How a child process ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running `rxfleet` command with its output gathered as it comes. */
export interface RxfleetProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Every stdout line that parsed as a JSON object, in order (pino logs, simulate's reports). */
  readonly lines: Record<string, unknown>[];
  /** The first JSON line for which `match` holds, now or when it comes. */
  next(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  readonly exited: Promise<Exit>;
  /** True until it has exited. */
  running(): boolean;
}

/** Starts `rxfleet ...args`; stdout is parsed as JSON lines where it can be. */
export function startRxfleet(args: string[]): RxfleetProcess {
  const child = spawn(process.execPath, [RXFLEET_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const lines: Record<string, unknown>[] = [];
  const waiting: { match: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }[] = [];
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  createInterface({ input: child.stdout! }).on('line', (text) => {
    out += `${text}\n`;
    let line: unknown;
    try {
      line = JSON.parse(text);
    } catch {
      return;
    }
    if (typeof line !== 'object' || line === null) return;
    const record = line as Record<string, unknown>;
    lines.push(record);
    for (const w of waiting.filter((w) => w.match(record))) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(record);
    }
  });
  let ended = false;
  const exited = new Promise<Exit>((done) =>
    child.once('exit', (code, signal) => {
      ended = true;
      done({ code, signal });
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    lines,
    next: (match) => {
      const seen = lines.find(match);
      return seen !== undefined ? Promise.resolve(seen) : new Promise((resolveLine) => waiting.push({ match, resolve: resolveLine }));
    },
    exited,
    running: () => !ended,
  };
}

/** SIGKILLs whatever of these still runs and waits for each to be gone. */
export async function killAll(processes: RxfleetProcess[]): Promise<void> {
  for (const p of processes) if (p.running()) p.child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exited));
}
