import { Logger } from '../../lib/logger';
import { MAX_HELPER_LINE_BYTES } from '../../lib/provision/helper/helperProtocol';
import { HelperRestartReason } from '../../lib/provision/metrics/helperPoolMetrics';
import { HelperFailure, HelperRunObserver } from './helperRunner';
import { HelperProcess, HelperProcessEnd } from './helperProcess';

/** Where the pool reports restarts and its running processes: {@link HelperPoolMetrics} fits. */
export interface HelperPoolObserver extends HelperRunObserver {
  helperRestart(reason: HelperRestartReason): void;
  setHelperProcesses(running: number): void;
}

/** The default pause before a slot's `failures`-th restart in a row: 100 ms doubling to 30 s. */
export const persistentHelperRestartDelay = (failures: number): number => Math.min(30_000, 100 * 2 ** Math.max(0, failures - 1));

/** One place in the pool: its current process (none while it waits to restart) and the requests on it. */
export interface HelperSlot<R> {
  readonly index: number;
  process: HelperProcess | undefined;
  /** Requests written to this process and not yet answered. */
  readonly inFlight: Map<string, R>;
  /** Ids given up on (aborted) while this process runs: their late answers are expected, and dropped. */
  readonly abandoned: Set<string>;
  failures: number;
  /** Answers this process gave; one answer is enough to reset the restart backoff. */
  answered: number;
  restartTimer: NodeJS.Timeout | undefined;
  /** Resolves when the current process has ended. */
  ended: Promise<void>;
  markEnded: () => void;
}

/** Options for {@link HelperProcessPool}; {@link PersistentHelperOptions} fits. */
export interface HelperProcessPoolOptions {
  /** The `helper` setting, for messages. */
  command: string;
  /** How many processes (at least 1). */
  processes: number;
  metrics?: HelperPoolObserver;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Default 16 MiB. */
  maxLineBytes?: number;
  /** The pause before restarting a slot's process after its `failures`-th failure in a row. Default 100 ms doubling to 30 s. */
  restartDelayMs?: (failures: number) => number;
  /** How long `close()` lets the processes exit after their stdin closes. Default 2 s. */
  closeGraceMs?: number;
}

/** What the pool tells its owner, who keeps the requests. */
export interface HelperProcessPoolEvents<R> {
  /** A line from a slot's process (possibly one the slot has since replaced: check `slot.process`). */
  line(slot: HelperSlot<R>, process: HelperProcess, line: string): void;
  /** A process started: waiting requests can be sent. */
  started(): void;
  /** The slot's process is gone: every request in its `inFlight` must fail with `kind` and `why` (after the command). */
  lost(slot: HelperSlot<R>, kind: HelperFailure, why: string, stderr: string): void;
  /** A process could not be started and none runs: nothing will serve the waiting requests soon. */
  cannotStart(message: string): void;
}

/**
 * The persistent helper's processes (DECISIONS P17): `processes` slots, each running one helper
 * process. A process that exits, cannot start, or is {@link restart}ed for misbehaving is killed
 * with its process group, its slot's requests are handed to `lost`, and another is started after
 * a backoff (100 ms doubling to 30 s, from the start again once a process had answered). After
 * {@link close} or {@link kill} nothing is started again.
 */
export class HelperProcessPool<R> {
  /** Every slot, in index order. */
  readonly slots: HelperSlot<R>[];
  /** Why the last process went away, for the message of a request no process was there to answer. */
  lastFailure = 'none yet';
  private nextSlot = 0;
  private closed = false;

  constructor(
    /** The command split shell-style; undefined when it did not split, and then nothing ever starts. */
    private readonly argv: string[] | undefined,
    private readonly options: HelperProcessPoolOptions,
    private readonly logger: Logger,
    private readonly events: HelperProcessPoolEvents<R>,
  ) {
    this.slots = Array.from({ length: options.processes }, (_, index) => ({
      index,
      process: undefined,
      inFlight: new Map(),
      abandoned: new Set(),
      failures: 0,
      answered: 0,
      restartTimer: undefined,
      ended: Promise.resolve(),
      markEnded: () => undefined,
    }));
  }

  /** True once closed or killed. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Starts every slot's process (nothing when the command did not split). */
  startAll(): void {
    if (this.argv !== undefined) for (const slot of this.slots) this.start(slot);
  }

  /** Processes running now. */
  running(): number {
    return this.slots.filter((s) => s.process !== undefined).length;
  }

  /** The running slot with the fewest requests in flight, taking turns among equals; undefined while none runs. */
  leastBusy(): HelperSlot<R> | undefined {
    let best: HelperSlot<R> | undefined;
    for (let i = 0; i < this.slots.length; i++) {
      const slot = this.slots[(this.nextSlot + i) % this.slots.length];
      if (slot.process !== undefined && (best === undefined || slot.inFlight.size < best.inFlight.size)) best = slot;
    }
    if (best !== undefined) this.nextSlot = (best.index + 1) % this.slots.length;
    return best;
  }

  /** Kills a misbehaving process, fails what it had in flight, and starts another after the backoff. */
  restart(slot: HelperSlot<R>, process: HelperProcess, reason: HelperRestartReason, why: string): void {
    if (slot.process !== process) return;
    process.kill();
    slot.markEnded();
    this.replace(slot, process, reason, why);
  }

  /**
   * Starts nothing more and closes every process's stdin (a helper reading to the end of its input
   * exits); what still runs after `closeGraceMs` is killed. Resolves when every process has ended.
   */
  close(): Promise<void> {
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
    return Promise.all(ends).then(() => undefined);
  }

  /** Kills every process group at once and hands each slot's requests to `lost` as aborted. */
  kill(): void {
    this.closed = true;
    for (const slot of this.slots) {
      clearTimeout(slot.restartTimer);
      slot.process?.kill();
      this.events.lost(slot, 'aborted', 'was killed: the provisioner is exiting', '');
    }
  }

  private start(slot: HelperSlot<R>): void {
    if (this.closed || this.argv === undefined) return;
    const [executable, ...args] = this.argv;
    const process: HelperProcess = new HelperProcess({
      executable,
      args,
      env: this.options.env,
      cwd: this.options.cwd,
      maxLineBytes: this.options.maxLineBytes ?? MAX_HELPER_LINE_BYTES,
      onLine: (line) => this.events.line(slot, process, line),
      onOversize: () =>
        this.restart(slot, process, 'oversize', `wrote a line longer than ${this.options.maxLineBytes ?? MAX_HELPER_LINE_BYTES} bytes`),
      onEnd: (end) => this.ended(slot, process, end),
    });
    slot.process = process;
    slot.answered = 0;
    slot.ended = new Promise((resolve) => (slot.markEnded = resolve));
    this.options.metrics?.setHelperProcesses(this.running());
    this.logger.info(
      { slot: slot.index, pid: process.pid },
      `started persistent helper process ${process.pid ?? '(none)'} (${slot.index + 1} of ${this.slots.length})`,
    );
    this.events.started();
  }

  private ended(slot: HelperSlot<R>, process: HelperProcess, end: HelperProcessEnd): void {
    if (slot.process !== process) return;
    slot.markEnded();
    if (end.spawnError !== undefined && process.pid === undefined) {
      this.replace(slot, process, 'start', `could not be started: ${end.spawnError.message}`);
      // Nothing will serve the waiting requests soon if no process runs at all: they fail now.
      if (this.running() === 0) this.events.cannotStart(`cannot start ${this.options.command}: ${end.spawnError.message}`);
      return;
    }
    this.replace(slot, process, 'exit', `exited: ${end.code === null ? `signal: ${end.signal ?? 'unknown'}` : `exit status ${end.code}`}`);
  }

  private replace(slot: HelperSlot<R>, process: HelperProcess, reason: HelperRestartReason, why: string): void {
    slot.process = undefined;
    slot.abandoned.clear();
    slot.failures = slot.answered > 0 ? 1 : slot.failures + 1;
    this.lastFailure = `process ${process.pid ?? '(none)'} ${why}`;
    this.events.lost(slot, reason, `(pid ${process.pid ?? 'none'}) ${why}`, process.stderr());
    this.options.metrics?.setHelperProcesses(this.running());
    if (this.closed) return;
    this.options.metrics?.helperRestart(reason);
    const delay = (this.options.restartDelayMs ?? persistentHelperRestartDelay)(slot.failures);
    this.logger.warn(
      { slot: slot.index, pid: process.pid, reason, restartInMs: delay },
      `persistent helper process ${process.pid ?? '(none)'} ${why}; restarting it in ${delay} ms`,
    );
    slot.restartTimer = setTimeout(() => this.start(slot), delay);
  }
}
