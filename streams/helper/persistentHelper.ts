import { performance } from 'node:perf_hooks';
import { PauseGate } from '@rxfleet/operators';
import { formatGoDuration } from '../../lib/choria/duration';
import { Logger, silentLogger } from '../../lib/logger';
import { HelperCommandError, splitHelperCommand } from '../../lib/provision/helper/helperCommand';
import { HelperInput } from '../../lib/provision/helper/helperInput';
import { decodeHelperAnswer, encodeHelperRequest } from '../../lib/provision/helper/helperProtocol';
import { HelperResponse } from '../../lib/provision/helper/helperResponse';
import { HelperError, HelperFailure } from './helperRunner';
import { HelperProcess } from './helperProcess';
import { HelperPoolObserver, HelperProcessPool, HelperSlot } from './helperProcessPool';

export { persistentHelperRestartDelay } from './helperProcessPool';
export type { HelperPoolObserver } from './helperProcessPool';

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

type Slot = HelperSlot<Request>;

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
 *
 * This class keeps the requests (ids, timeouts, aborts, matching answers); the processes, their
 * restarts and backoff are {@link HelperProcessPool}'s.
 */
export class PersistentHelper {
  private readonly argv: string[] | HelperCommandError;
  private readonly pool: HelperProcessPool<Request>;
  private readonly waiting = new Set<Request>();
  private readonly timeoutMs: number;
  private nextId = 0;

  constructor(private readonly options: PersistentHelperOptions) {
    try {
      this.argv = splitHelperCommand(options.command);
    } catch (error) {
      if (!(error instanceof HelperCommandError)) throw error;
      this.argv = error;
    }
    if (!(options.processes >= 1)) throw new RangeError(`processes must be >= 1, got ${options.processes}`);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.pool = new HelperProcessPool<Request>(
      this.argv instanceof HelperCommandError ? undefined : this.argv,
      options,
      options.logger ?? silentLogger,
      {
        line: (slot, process, line) => this.onLine(slot, process, line),
        started: () => this.dispatch(),
        lost: (slot, kind, why, stderr) => this.failSlot(slot, kind, why, stderr),
        cannotStart: (message) => this.failWaiting('start', message),
      },
    );
    this.pool.startAll();
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
    return this.pool.running();
  }

  /**
   * Stops: no request is accepted, every process's stdin is closed (a helper reading to the end of
   * its input exits), and what still runs after `closeGraceMs` is killed. Requests still in flight
   * fail as aborted.
   */
  async close(): Promise<void> {
    if (this.pool.isClosed) return;
    const ends = this.pool.close();
    this.failWaiting('aborted', `${this.options.command} was stopped`);
    await ends;
  }

  /** Kills every process group at once and fails what is in flight: for a process about to exit. */
  kill(): void {
    this.pool.kill();
    this.failWaiting('aborted', `${this.options.command} was killed: the provisioner is exiting`);
  }

  private ask(input: HelperInput, signal: AbortSignal | undefined): Promise<HelperResponse> {
    const command = this.options.command;
    const closed = this.pool.isClosed;
    if (this.argv instanceof HelperCommandError) return Promise.reject(new HelperError('command', this.argv.message));
    if (this.options.gate?.paused === true)
      return Promise.reject(new HelperError('paused', `Provisioning is paused, cannot perform ${command}`));
    if (signal?.aborted === true || closed)
      return Promise.reject(new HelperError('aborted', `${command} was not asked: ${closed ? 'the helper is stopped' : 'aborted'}`));
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
      const slot = this.pool.leastBusy();
      if (slot === undefined) return;
      this.waiting.delete(request);
      request.slot = slot;
      slot.inFlight.set(request.id, request);
      slot.process?.send(request.line);
    }
  }

  private onLine(slot: Slot, process: HelperProcess, line: string): void {
    if (slot.process !== process) return;
    const answer = decodeHelperAnswer(line);
    if (answer.kind === 'blank') return;
    if (answer.kind === 'violation')
      return this.pool.restart(slot, process, 'protocol', `wrote a line that is not an answer: ${answer.reason}`);
    const request = slot.inFlight.get(answer.id);
    if (request === undefined) {
      if (slot.abandoned.delete(answer.id)) return;
      return this.pool.restart(
        slot,
        process,
        'protocol',
        `answered request id ${JSON.stringify(answer.id)}, which it was not asked or had already answered`,
      );
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
      request.reject(
        new HelperError(
          'timeout',
          `${this.options.command} did not answer within ${limit}: no helper process was running (last failure: ${this.pool.lastFailure})`,
        ),
      );
      return;
    }
    // A request unanswered past its timeout means the process is hung: its other answers cannot be counted on either.
    const process = slot.process as HelperProcess;
    slot.inFlight.delete(request.id);
    request.detach();
    request.reject(
      new HelperError(
        'timeout',
        `${this.options.command} (pid ${process.pid}) did not answer within ${limit}: its process group was killed and the helper restarted`,
        process.stderr(),
      ),
    );
    this.pool.restart(slot, process, 'timeout', `did not answer request id ${JSON.stringify(request.id)} within ${limit}`);
  }

  private abandon(request: Request): void {
    request.detach();
    if (request.slot === undefined) this.waiting.delete(request);
    else if (request.slot.inFlight.delete(request.id)) request.slot.abandoned.add(request.id);
    request.reject(new HelperError('aborted', `${this.options.command} was aborted: its answer will be ignored`));
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
