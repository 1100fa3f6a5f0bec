import type { ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { PauseGate } from '@rxfleet/operators';
import { formatGoDuration } from '../../lib/choria/duration';
import { Logger, silentLogger } from '../../lib/logger';
import { HelperCommandError, splitHelperCommand } from '../../lib/provision/helper/helperCommand';
import { HelperInput, encodeHelperInput } from '../../lib/provision/helper/helperInput';
import { HelperOutputError, HelperResponse, decodeHelperResponse } from '../../lib/provision/helper/helperResponse';
import { HelperOutputBudget } from './outputBudget';
import { killGroup, spawnSupervised } from './supervisedSpawn';
import { definedFields } from '../../lib/definedFields';

/** Why a helper run failed. */
export type HelperFailure =
  /** The command line cannot be split (`cannot parse helper command: ...`). */
  | 'command'
  /** The pause gate was closed: the helper was not started. */
  | 'paused'
  /** The executable could not be started. */
  | 'start'
  /** It ran past the timeout; its process group was killed. */
  | 'timeout'
  /** It exited non-zero or was killed by a signal. */
  | 'exit'
  /** It exited 0 without writing anything. */
  | 'empty'
  /** Its output is not a helper response. */
  | 'decode'
  /** It wrote more than the output limit; its process group was killed. */
  | 'oversize'
  /** The caller's signal aborted the run; its process group was killed. */
  | 'aborted'
  /** A persistent helper wrote a line that is not an answer, or answered an id it was not asked. */
  | 'protocol';

export type { HelperOutputBudget } from './outputBudget';

/**
 * A failed helper run. The message is upstream's (`could not invoke configure helper: ...`),
 * followed by the start of the helper's stderr when it wrote any (DECISIONS P11).
 */
export class HelperError extends Error {
  constructor(
    readonly kind: HelperFailure,
    message: string,
    /** The first `stderrLimitBytes` of stderr (UTF-8, possibly cut mid-line). */
    readonly stderr = '',
  ) {
    const trimmed = stderr.trim();
    super(`could not invoke configure helper: ${message}${trimmed === '' ? '' : `; stderr: ${JSON.stringify(trimmed)}`}`);
    this.name = 'HelperError';
  }
}

/** Where helper runs are counted: {@link ProvisionerMetrics} fits. */
export interface HelperRunObserver {
  /** Every run, refused and failed ones included, as upstream's `helper_time`. */
  observeHelper(seconds: number): void;
  /** Every failed run, as upstream's `helper_errors`. */
  helperError(): void;
}

/** Options for {@link HelperRunner}. */
export interface HelperRunnerOptions {
  /** The `helper` setting: an executable and arguments, split shell-style, run without a shell. */
  command: string;
  /** Default 10 s (upstream's fixed value; `rxfleet.helper_timeout`). */
  timeoutMs?: number;
  /** While closed, runs are refused before the helper starts. */
  gate?: PauseGate;
  /** How much of stderr to keep for the error; default 4 KiB. */
  stderrLimitBytes?: number;
  /** The most stdout to accept from one run; default 16 MiB (at most `totalOutputBytes`). */
  maxOutputBytes?: number;
  /**
   * The most stdout held at once across every run in flight (each is held until its helper exits);
   * default 64 MiB. A run whose output does not fit is ended and fails, so the daemon's memory for
   * helper output is bounded whatever `workers` says.
   */
  totalOutputBytes?: number;
  metrics?: HelperRunObserver;
  logger?: Logger;
  /** The helper's environment; default this process's. */
  env?: NodeJS.ProcessEnv;
  /** The helper's working directory; default this process's. */
  cwd?: string;
}

/**
 * Runs the helper for one node at a time per call, as upstream's `runHelper` + `getConfig`, with
 * DECISIONS P11:
 * - the command is split like go-shellquote (arguments allowed, no expansion) and run without a
 *   shell reading it, in its own process group, registered with the daemon's one supervisor
 *   ({@link spawnSupervised}), which kills the group when this process ends, even by SIGKILL: no
 *   helper outlives the daemon;
 * - stdout is capped per run (`maxOutputBytes`) and across the runs in flight
 *   (`totalOutputBytes`): past either, the run's group is killed and the run fails;
 * - the helper input JSON goes to stdin, which is then closed; stdout is decoded as the helper
 *   response; the first few KiB of stderr are kept for the error;
 * - past the timeout the whole process group is killed (SIGKILL), children included; when the
 *   helper exits, anything it left behind in its group is killed too, so no run leaks a process;
 * - a closed pause gate refuses the run before the helper starts;
 * - `helper_time` is observed for every run and `helper_errors` counted for every failure.
 *
 * Rejects with {@link HelperError}, never anything else.
 */
export class HelperRunner {
  private readonly argv: string[] | HelperCommandError;
  private readonly timeoutMs: number;
  private readonly stderrLimit: number;
  private readonly maxOutput: number;
  private readonly budget: HelperOutputBudget;
  private readonly logger: Logger;

  constructor(private readonly options: HelperRunnerOptions) {
    try {
      this.argv = splitHelperCommand(options.command);
    } catch (error) {
      if (!(error instanceof HelperCommandError)) throw error;
      this.argv = error;
    }
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.stderrLimit = options.stderrLimitBytes ?? 4096;
    this.budget = new HelperOutputBudget(options.totalOutputBytes ?? 64 * 1024 * 1024);
    this.maxOutput = Math.min(options.maxOutputBytes ?? 16 * 1024 * 1024, this.budget.limitBytes);
    this.logger = options.logger ?? silentLogger;
  }

  /** The helper for `input` (an object, or its JSON text); `signal` aborts it (shutdown). */
  async run(input: HelperInput | string, signal?: AbortSignal): Promise<HelperResponse> {
    const started = performance.now();
    try {
      const output = await this.execute(typeof input === 'string' ? input : encodeHelperInput(input), signal);
      try {
        return decodeHelperResponse(output);
      } catch (error) {
        if (!(error instanceof HelperOutputError)) throw error;
        throw new HelperError('decode', `cannot decode output from ${this.options.command}: ${error.message}`);
      }
    } catch (error) {
      this.options.metrics?.helperError();
      throw error instanceof HelperError
        ? error
        : new HelperError('start', `cannot start ${this.options.command}: ${(error as Error).message}`);
    } finally {
      const seconds = (performance.now() - started) / 1000;
      this.options.metrics?.observeHelper(seconds);
      const identity = typeof input === 'string' ? undefined : input.identity;
      this.logger.debug(
        { seconds, identity },
        `helper run${identity === undefined ? '' : ` for ${identity}`} finished in ${formatGoDuration(Math.round(seconds * 1000))}`,
      );
    }
  }

  private execute(input: string, signal: AbortSignal | undefined): Promise<string> {
    const command = this.options.command;
    if (this.argv instanceof HelperCommandError) return Promise.reject(new HelperError('command', this.argv.message));
    if (this.options.gate?.paused === true)
      return Promise.reject(new HelperError('paused', `Provisioning is paused, cannot perform ${command}`));
    if (signal?.aborted === true) return Promise.reject(new HelperError('aborted', `${command} was not started: aborted`));
    const [executable, ...args] = this.argv;

    return new Promise<string>((resolve, reject) => {
      let child: ChildProcess;
      try {
        // Its own process group (killed as one), tied to this process's life by the supervisor.
        child = spawnSupervised(executable, args, {
          env: this.options.env ?? process.env,
          ...definedFields({ cwd: this.options.cwd }),
        });
      } catch (error) {
        reject(new HelperError('start', `cannot start ${command}: ${(error as Error).message}`));
        return;
      }
      const stdout: Buffer[] = [];
      let stdoutBytes = 0;
      const stderr: Buffer[] = [];
      let stderrBytes = 0;
      let ended: HelperFailure | undefined;
      let spawnError: Error | undefined;

      const stop = (why: HelperFailure): void => {
        if (ended === undefined) ended = why;
        killGroup(child);
      };
      const timer = setTimeout(() => stop('timeout'), this.timeoutMs);
      const onAbort = (): void => stop('aborted');
      signal?.addEventListener('abort', onAbort, { once: true });

      let held = 0;
      let overBudget = false;
      child.stdout?.on('data', (chunk: Buffer) => {
        stdoutBytes += chunk.length;
        if (ended !== undefined) return;
        if (stdoutBytes > this.maxOutput) return stop('oversize');
        if (!this.budget.take(chunk.length)) {
          overBudget = true;
          return stop('oversize');
        }
        held += chunk.length;
        stdout.push(chunk);
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        // Keep reading past the limit, so a chatty helper never blocks on a full pipe.
        if (stderrBytes < this.stderrLimit) stderr.push(chunk.subarray(0, this.stderrLimit - stderrBytes));
        stderrBytes += chunk.length;
      });
      // A helper that exits without reading its input closes the pipe under us: not an error.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(input);

      let settled = false;
      const finish = (): boolean => {
        if (settled) return false;
        settled = true;
        this.budget.give(held);
        held = 0;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      child.on('error', (error) => {
        spawnError = error;
        // A helper that never started emits no 'close' on every Node version: settle here.
        if (child.pid === undefined && finish()) reject(new HelperError('start', `cannot start ${command}: ${error.message}`));
      });
      child.on('close', (code, exitSignal) => {
        if (!finish()) return;
        const errText = Buffer.concat(stderr).toString('utf8');
        const fail = (kind: HelperFailure, message: string): void => reject(new HelperError(kind, message, errText));
        if (spawnError !== undefined) return fail('start', `cannot start ${command}: ${spawnError.message}`);
        if (ended === 'timeout')
          return fail('timeout', `${command} did not finish within ${formatGoDuration(this.timeoutMs)}: its process group was killed`);
        if (ended === 'aborted') return fail('aborted', `${command} was aborted: its process group was killed`);
        if (ended === 'oversize' && overBudget)
          return fail(
            'oversize',
            `${command} was stopped: the helpers in flight held more than ${this.budget.limitBytes} bytes of output between them; its process group was killed`,
          );
        if (ended === 'oversize')
          return fail('oversize', `${command} wrote more than ${this.maxOutput} bytes: its process group was killed`);
        if (code !== 0)
          return fail(
            'exit',
            `could not wait for ${command}: ${code === null ? `signal: ${exitSignal ?? 'unknown'}` : `exit status ${code}`}`,
          );
        if (stdoutBytes === 0) return fail('empty', `cannot read ${command} output: zero bytes received`);
        resolve(Buffer.concat(stdout).toString('utf8'));
      });
    });
  }
}
