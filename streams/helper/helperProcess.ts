import type { ChildProcess } from 'node:child_process';
import { LineSplitter } from '@rxfleet/operators';
import { MAX_HELPER_LINE_BYTES } from '../../lib/provision/helper/helperProtocol';
import { killGroup, spawnSupervised } from './supervisedSpawn';
import { definedFields } from '../../lib/definedFields';

/** How a persistent helper process ended. */
export interface HelperProcessEnd {
  /** Its exit status, or null when a signal ended it. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when it could not be started at all (no such executable, not executable). */
  spawnError?: Error;
}

/** Options for {@link HelperProcess}. */
export interface HelperProcessOptions {
  executable: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Default 16 MiB. */
  maxLineBytes?: number;
  /** How much of the end of stderr to keep for error messages. Default 4 KiB. */
  stderrTailBytes?: number;
  /** Each complete stdout line, in order. */
  onLine: (line: string) => void;
  /** A stdout line grew past `maxLineBytes`; no further line is delivered. */
  onOversize: () => void;
  /** Once, when it has ended and every line it wrote was delivered. */
  onEnd: (end: HelperProcessEnd) => void;
}

/**
 * One long-running helper process: started without a shell in its own process group (so the
 * group can be killed as one) under the daemon's supervisor ({@link spawnSupervised}), so it and
 * its group die with the daemon however the daemon dies; stdin kept open for request lines, stdout
 * cut into lines, the end of stderr kept. When it exits, anything it left running in its group is
 * killed, as for the per-node helper, so no run leaks a process. `onEnd` comes after the last line
 * (the pipes have closed), so an answer written just before dying is still delivered.
 */
export class HelperProcess {
  private readonly child: ChildProcess | undefined;
  private stderrTail = Buffer.alloc(0);
  private ended = false;

  constructor(options: HelperProcessOptions) {
    const splitter = new LineSplitter(options.maxLineBytes ?? MAX_HELPER_LINE_BYTES);
    const tailBytes = options.stderrTailBytes ?? 4096;
    let spawnError: Error | undefined;
    const finish = (end: HelperProcessEnd): void => {
      if (this.ended) return;
      this.ended = true;
      options.onEnd(end);
    };
    try {
      this.child = spawnSupervised(options.executable, options.args, {
        env: options.env ?? process.env,
        ...definedFields({ cwd: options.cwd }),
      });
    } catch (error) {
      // Nothing started: reported as Node's spawn reports it, after the constructor returns.
      this.child = undefined;
      process.nextTick(() => finish({ code: null, signal: null, spawnError: error as Error }));
      return;
    }
    const child = this.child;
    let oversize = false;
    child.stdout?.on('data', (chunk: Buffer) => {
      if (oversize) return;
      const { lines, oversize: tooLong } = splitter.push(chunk);
      for (const line of lines) options.onLine(line);
      if (tooLong) {
        oversize = true;
        options.onOversize();
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      // Keep reading for ever, so a chatty helper never blocks on a full pipe; keep only the end.
      const joined = Buffer.concat([this.stderrTail, chunk]);
      this.stderrTail = joined.length > tailBytes ? joined.subarray(joined.length - tailBytes) : joined;
    });
    // A helper that dies closes the pipe under a pending write: its end is reported by 'close'.
    child.stdin?.on('error', () => undefined);
    child.on('error', (error) => {
      spawnError = error;
      // A process that never started emits no 'close' on every Node version: end here.
      if (child.pid === undefined) finish({ code: null, signal: null, spawnError: error });
    });
    child.on('close', (code, signal) => finish({ code, signal, ...definedFields({ spawnError }) }));
  }

  /** Its process id (undefined when it could not be started). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The end of what it wrote to stderr, as text. */
  stderr(): string {
    return this.stderrTail.toString('utf8');
  }

  /** Writes a request line (newline included). False when it can no longer be written to. */
  send(line: string): boolean {
    const stdin = this.child?.stdin;
    if (this.ended || stdin === undefined || stdin === null || stdin.destroyed || stdin.writableEnded) return false;
    stdin.write(line);
    return true;
  }

  /** Closes its stdin: a helper reading to the end of its input finishes and exits. */
  endInput(): void {
    const stdin = this.child?.stdin;
    if (stdin !== undefined && stdin !== null && !stdin.writableEnded) stdin.end();
  }

  /** Kills its whole process group at once (SIGKILL). */
  kill(): void {
    if (this.child !== undefined) killGroup(this.child);
  }
}
