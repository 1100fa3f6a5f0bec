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
  /**
   * The first JSON line for which `match` holds, now or when it comes; rejects, with the end of
   * stderr, if the process ends without printing one.
   */
  next(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Resolves once it has exited and its output is all read (`close`, not `exit`). */
  readonly exited: Promise<Exit>;
  /** True until it has exited. */
  running(): boolean;
}

/** How to start it, beyond its arguments. */
export interface StartOptions {
  /** Added to this process's environment (a key set to `undefined` is removed). */
  env?: Record<string, string | undefined>;
  /** Arguments to node before the bin (`--require` a fixture). */
  nodeArgs?: string[];
  cwd?: string;
}

/** Starts `rxfleet ...args`; stdout is parsed as JSON lines where it can be. */
export function startRxfleet(args: string[], options: StartOptions = {}): RxfleetProcess {
  const env = options.env === undefined ? process.env : { ...process.env, ...options.env };
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), RXFLEET_BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
  });
  let out = '';
  let err = '';
  const lines: Record<string, unknown>[] = [];
  const waiting: {
    match: (line: Record<string, unknown>) => boolean;
    resolve: (line: Record<string, unknown>) => void;
    reject: (error: Error) => void;
  }[] = [];
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
  let ended: Exit | undefined;
  const endedWithout = (): Error =>
    new Error(`rxfleet ${args[0]} exited (${ended?.code ?? ended?.signal}) without the line waited for; stderr: ${err.slice(-500)}`);
  // 'close' comes after stdout and stderr have ended, so every line is in `lines` by then.
  const exited = new Promise<Exit>((done) =>
    child.once('close', (code, signal) => {
      ended = { code, signal };
      for (const w of waiting.splice(0)) w.reject(endedWithout());
      done(ended);
    }),
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    lines,
    next: (match) => {
      const seen = lines.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      if (ended !== undefined) return Promise.reject(endedWithout());
      return new Promise((resolve, reject) => waiting.push({ match, resolve, reject }));
    },
    exited,
    running: () => ended === undefined && child.exitCode === null && child.signalCode === null,
  };
}

/**
 * SIGKILLs whatever of these still runs and waits for each to be gone. A provisioner's helpers run
 * in their own process group and may outlive it by their own run time (the spec helpers' seconds).
 */
export async function killAll(processes: RxfleetProcess[]): Promise<void> {
  for (const p of processes) if (p.running()) p.child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exited));
}
