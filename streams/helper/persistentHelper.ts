import { performance } from 'node:perf_hooks';
import { PauseGate } from '@rxfleet/operators';
import { formatGoDuration } from '../../lib/choria/duration';
import { Logger, silentLogger } from '../../lib/logger';
import { HelperCommandError, splitHelperCommand } from '../../lib/provision/helperCommand';
import { HelperInput } from '../../lib/provision/helperInput';
import { decodeHelperAnswer, encodeHelperRequest, MAX_HELPER_LINE_BYTES } from '../../lib/provision/helperProtocol';
import { HelperResponse } from '../../lib/provision/helperResponse';
import { HelperRestartReason } from '../../lib/provision/helperPoolMetrics';
import { HelperError, HelperFailure, HelperRunObserver } from './helperRunner';
import { HelperProcess, HelperProcessEnd } from './helperProcess';

/** Where the pool reports restarts and its running processes: {@link HelperPoolMetrics} fits. */
export interface HelperPoolObserver extends HelperRunObserver {
  helperRestart(reason: HelperRestartReason): void;
  setHelperProcesses(running: number): void;
}

/** Options for {@link PersistentHelper}. */
export interface PersistentHelperOptions {
  /** The `helper` setting, split shell-style and run without a shell, as the per-node helper. */
  command: string;
  /** How many processes (at least 1). */
  processes: number;
  /** A request unanswered this long fails, and its process is deemed hung and restarted. Default 10 s. */
  timeoutMs?: number;
  /** While closed, requests are refused before they are sent. */
  gate?: PauseGate;
  metrics?: HelperPoolObserver;
  logger?: Logger;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Default 16 MiB. */
  maxLineBytes?: number;
  /** The pause before restarting a slot's process after its `failures`-th failure in a row. Default 100 ms doubling to 30 s. */
  restartDelayMs?: (failures: number) => number;
  /** How long `close()` lets the processes exit after their stdin closes. Default 2 s. */
  closeGraceMs?: number;
}

interface Request {
  readonly id: string;
  readonly line: string;
  readonly resolve: (response: HelperResponse) => void;
  readonly reject: (error: HelperError) => void;
  timer: NodeJS.Timeout;
  slot: Slot | undefined;
  detach: () => void;
}

interface Slot {
  readonly index: number;
  process: HelperProcess | undefined;
  /** Requests written to this process and not yet answered. */
  readonly inFlight: Map<string, Request>;
  /** Ids given up on (aborted) while this process runs: their late answers are expected, and dropped. */
  readonly abandoned: Set<string>;
  failures: number;
  answered: number;
  restartTimer: NodeJS.Timeout | undefined;
  /** Resolves when the current process has ended. */
  ended: Promise<void>;
  markEnded: () => void;
}

/** The default pause before a slot's `failures`-th restart in a row: 100 ms doubling to 30 s. */
export const persistentHelperRestartDelay = (failures: number): number => Math.min(30_000, 100 * 2 ** Math.max(0, failures - 1));

/**
 * The persistent helper (DECISIONS P17): `processes` long-running helper processes, each reading
 * one JSON request per line and writing one JSON answer per line, matched by request id, so
 * answers may come back in any order. For the provisioning cycle it is a drop-in for the per-node
 * {@link HelperRunner}: the same input and output, the same errors and metrics.
 *
 * Guarantees:
 * - Every `run` settles exactly once, and only with the answer carrying its own id: nothing lost,
 *   nothing answered twice.
 * - A request goes to the running process with the fewest requests in flight; while none runs it
 *   waits (in order) for one, within its timeout.
 * - A process that dies, hangs (a request unanswered past the timeout), writes a line that is not
 *   an answer, a line longer than the limit, or an answer to an id it was not asked (or twice) is
 *   killed with its process group and restarted after a backoff (100 ms doubling to 30 s, from the
 *   start again once a process had answered); every request in flight on it fails with a
 *   {@link HelperError}, and the pipeline retries those nodes.
 * - An answer whose fields do not decode fails that request only (`cannot decode output ...`).
 * - A closed pause gate refuses a request before it is sent; an aborted request rejects at once
 *   and its late answer is dropped. `helper_time` is observed for every request and
 *   `helper_errors` counted for every failure.
 */
export class PersistentHelper {
  private readonly argv: string[] | HelperCommandError;
  private readonly slots: Slot[];
  private readonly waiting = new Set<Request>();
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private nextId = 0;
  private nextSlot = 0;
  private closed = false;
  private lastFailure = 'none yet';

  constructor(private readonly options: PersistentHelperOptions) {
    try {
      this.argv = splitHelperCommand(options.command);
    } catch (error) {
      if (!(error instanceof HelperCommandError)) throw error;
      this.argv = error;
    }
    if (!(options.processes >= 1)) throw new RangeError(`processes must be >= 1, got ${options.processes}`);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.logger = options.logger ?? silentLogger;
    this.slots = Array.from({ length: options.processes }, (_, index) => ({ index, process: undefined, inFlight: new Map(), abandoned: new Set(), failures: 0, answered: 0, restartTimer: undefined, ended: Promise.resolve(), markEnded: () => undefined }));
    if (!(this.argv instanceof HelperCommandError)) for (const slot of this.slots) this.start(slot);
  }

  /** The helper's answer for `input`; `signal` aborts the wait (shutdown). Rejects with {@link HelperError} only. */
  async run(input: HelperInput, signal?: AbortSignal): Promise<HelperResponse> {
    const started = performance.now();
    try {
      return await this.ask(input, signal);
    } catch (error) {
      this.options.metrics?.helperError();
      throw error;
    } finally {
      this.options.metrics?.observeHelper((performance.now() - started) / 1000);
    }
  }

  /** Processes running now. */
  running(): number {
    return this.slots.filter((s) => s.process !== undefined).length;
  }

  /**
   * Stops: no request is accepted, every process's stdin is closed (a helper reading to the end of
   * its input exits), and what still runs after `closeGraceMs` is killed. Requests still in flight
   * fail as aborted.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const ends = this.slots.map(async (slot) => {
      clearTimeout(slot.restartTimer);
      const process = slot.process;
      if (process === undefined) return;
      const timer = setTimeout(() => process.kill(), this.options.closeGraceMs ?? 2000);
      process.endInput();
      await slot.ended;
      clearTimeout(timer);
    });
    this.failWaiting('aborted', `${this.options.command} was stopped`);
    await Promise.all(ends);
  }

  /** Kills every process group at once and fails what is in flight: for a process about to exit. */
  kill(): void {
    this.closed = true;
    for (const slot of this.slots) {
      clearTimeout(slot.restartTimer);
      slot.process?.kill();
      this.failSlot(slot, 'aborted', 'was killed: the provisioner is exiting', '');
    }
    this.failWaiting('aborted', `${this.options.command} was killed: the provisioner is exiting`);
  }

  private ask(input: HelperInput, signal: AbortSignal | undefined): Promise<HelperResponse> {
    const command = this.options.command;
    if (this.argv instanceof HelperCommandError) return Promise.reject(new HelperError('command', this.argv.message));
    if (this.options.gate?.paused === true) return Promise.reject(new HelperError('paused', `Provisioning is paused, cannot perform ${command}`));
    if (signal?.aborted === true || this.closed) return Promise.reject(new HelperError('aborted', `${command} was not asked: ${this.closed ? 'the helper is stopped' : 'aborted'}`));
    return new Promise<HelperResponse>((resolve, reject) => {
      const id = String(++this.nextId);
      const onAbort = (): void => this.abandon(request);
      const request: Request = {
        id,
        line: encodeHelperRequest(id, input),
        resolve,
        reject,
        timer: setTimeout(() => this.timedOut(request), this.timeoutMs),
        slot: undefined,
        detach: () => {
          clearTimeout(request.timer);
          signal?.removeEventListener('abort', onAbort);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.add(request);
      this.dispatch();
    });
  }

  /** Sends waiting requests, oldest first, each to the running process with the fewest in flight. */
  private dispatch(): void {
    for (const request of this.waiting) {
      const slot = this.leastBusy();
      if (slot === undefined) return;
      this.waiting.delete(request);
      request.slot = slot;
      slot.inFlight.set(request.id, request);
      slot.process?.send(request.line);
    }
  }

  private leastBusy(): Slot | undefined {
    let best: Slot | undefined;
    for (let i = 0; i < this.slots.length; i++) {
      const slot = this.slots[(this.nextSlot + i) % this.slots.length];
      if (slot.process !== undefined && (best === undefined || slot.inFlight.size < best.inFlight.size)) best = slot;
    }
    if (best !== undefined) this.nextSlot = (best.index + 1) % this.slots.length;
    return best;
  }

  private start(slot: Slot): void {
    if (this.closed || this.argv instanceof HelperCommandError) return;
    const [executable, ...args] = this.argv;
    const process: HelperProcess = new HelperProcess({
      executable,
      args,
      env: this.options.env,
      cwd: this.options.cwd,
      maxLineBytes: this.options.maxLineBytes ?? MAX_HELPER_LINE_BYTES,
      onLine: (line) => this.onLine(slot, process, line),
      onOversize: () => this.restart(slot, process, 'oversize', `wrote a line longer than ${this.options.maxLineBytes ?? MAX_HELPER_LINE_BYTES} bytes`),
      onEnd: (end) => this.ended(slot, process, end),
    });
    slot.process = process;
    slot.answered = 0;
    slot.ended = new Promise((resolve) => (slot.markEnded = resolve));
    this.options.metrics?.setHelperProcesses(this.running());
    this.logger.info({ slot: slot.index, pid: process.pid }, `started persistent helper process ${process.pid ?? '(none)'} (${slot.index + 1} of ${this.slots.length})`);
    this.dispatch();
  }

  private onLine(slot: Slot, process: HelperProcess, line: string): void {
    if (slot.process !== process) return;
    const answer = decodeHelperAnswer(line);
    if (answer.kind === 'blank') return;
    if (answer.kind === 'violation') return this.restart(slot, process, 'protocol', `wrote a line that is not an answer: ${answer.reason}`);
    const request = slot.inFlight.get(answer.id);
    if (request === undefined) {
      if (slot.abandoned.delete(answer.id)) return;
      return this.restart(slot, process, 'protocol', `answered request id ${JSON.stringify(answer.id)}, which it was not asked or had already answered`);
    }
    slot.inFlight.delete(answer.id);
    slot.answered++;
    request.detach();
    if (answer.kind === 'answer') request.resolve(answer.response);
    else request.reject(new HelperError('decode', `cannot decode output from ${this.options.command}: ${answer.error.message}`));
  }

  private timedOut(request: Request): void {
    const slot = request.slot;
    const limit = formatGoDuration(this.timeoutMs);
    if (slot === undefined) {
      this.waiting.delete(request);
      request.detach();
      request.reject(new HelperError('timeout', `${this.options.command} did not answer within ${limit}: no helper process was running (last failure: ${this.lastFailure})`));
      return;
    }
    // A request unanswered past its timeout means the process is hung: its other answers cannot be counted on either.
    const process = slot.process as HelperProcess;
    slot.inFlight.delete(request.id);
    request.detach();
    request.reject(new HelperError('timeout', `${this.options.command} (pid ${process.pid}) did not answer within ${limit}: its process group was killed and the helper restarted`, process.stderr()));
    this.restart(slot, process, 'timeout', `did not answer request id ${JSON.stringify(request.id)} within ${limit}`);
  }

  private abandon(request: Request): void {
    request.detach();
    if (request.slot === undefined) this.waiting.delete(request);
    else if (request.slot.inFlight.delete(request.id)) request.slot.abandoned.add(request.id);
    request.reject(new HelperError('aborted', `${this.options.command} was aborted: its answer will be ignored`));
  }

  /** Kills a misbehaving process, fails what it had in flight, and starts another after the backoff. */
  private restart(slot: Slot, process: HelperProcess, reason: HelperRestartReason, why: string): void {
    if (slot.process !== process) return;
    process.kill();
    slot.markEnded();
    this.replace(slot, process, reason, why);
  }

  private ended(slot: Slot, process: HelperProcess, end: HelperProcessEnd): void {
    if (slot.process !== process) return;
    slot.markEnded();
    if (end.spawnError !== undefined && process.pid === undefined) {
      this.replace(slot, process, 'start', `could not be started: ${end.spawnError.message}`);
      // Nothing will serve the waiting requests soon if no process runs at all: they fail now.
      if (this.running() === 0) this.failWaiting('start', `cannot start ${this.options.command}: ${end.spawnError.message}`);
      return;
    }
    this.replace(slot, process, 'exit', `exited: ${end.code === null ? `signal: ${end.signal ?? 'unknown'}` : `exit status ${end.code}`}`);
  }

  private replace(slot: Slot, process: HelperProcess, reason: HelperRestartReason, why: string): void {
    slot.process = undefined;
    slot.abandoned.clear();
    slot.failures = slot.answered > 0 ? 1 : slot.failures + 1;
    this.lastFailure = `process ${process.pid ?? '(none)'} ${why}`;
    this.failSlot(slot, reason, `(pid ${process.pid ?? 'none'}) ${why}`, process.stderr());
    this.options.metrics?.setHelperProcesses(this.running());
    if (this.closed) return;
    this.options.metrics?.helperRestart(reason);
    const delay = (this.options.restartDelayMs ?? persistentHelperRestartDelay)(slot.failures);
    this.logger.warn({ slot: slot.index, pid: process.pid, reason, restartInMs: delay }, `persistent helper process ${process.pid ?? '(none)'} ${why}; restarting it in ${delay} ms`);
    slot.restartTimer = setTimeout(() => this.start(slot), delay);
  }

  private failSlot(slot: Slot, kind: HelperFailure, why: string, stderr: string): void {
    for (const request of slot.inFlight.values()) {
      request.detach();
      request.reject(new HelperError(kind, `${this.options.command} ${why}`, stderr));
    }
    slot.inFlight.clear();
  }

  private failWaiting(kind: HelperFailure, message: string): void {
    for (const request of this.waiting) {
      request.detach();
      request.reject(new HelperError(kind, message));
    }
    this.waiting.clear();
  }
}
