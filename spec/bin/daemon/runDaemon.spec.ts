import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Daemon, StopReport } from '../../../bin/daemon/contract';
import { RunDaemonOptions, runDaemon } from '../../../bin/daemon/runDaemon';
import { pendingExitCleanups } from '../../../streams/exitCleanup';

// runDaemon's contract, point by point, on a daemon whose every move the spec makes: a signal
// nobody else in the test process listens to, raised by hand, and `exit` recorded, not obeyed.

const SIGNAL: NodeJS.Signals = 'SIGUSR2';
const raise = (): boolean => process.emit(SIGNAL, SIGNAL);
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A daemon that stops when the spec says so, and records what was asked of it. */
class ScriptedDaemon implements Daemon {
  readonly port = undefined;
  readonly registry = new Registry();
  readonly calls: string[] = [];
  readonly stopped: Promise<StopReport>;
  private end!: (report: StopReport) => void;
  private stopping: Promise<StopReport> | undefined;

  constructor(private readonly stopsAtOnce = true) {
    this.stopped = new Promise((resolve) => (this.end = resolve));
  }
  ready = (): boolean => this.stopping === undefined;
  status = (): object => ({});
  stop = (): Promise<StopReport> => {
    this.calls.push('stop');
    this.stopping ??= this.stopsAtOnce ? this.finish({ abandoned: 0 }) : this.stopped;
    return this.stopping;
  };
  abort = (reason?: string): void => void this.calls.push(`abort: ${reason}`);
  /** Ends the daemon's run, asked to or by itself. */
  finish(report: StopReport): Promise<StopReport> {
    this.end(report);
    return this.stopped;
  }
}

describe('runDaemon: the contract every daemon command keeps', () => {
  let dir: string;
  let exits: number[];
  let stderr: string[];
  let logged: string[];
  let writeSpy: jest.SpyInstance;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxfleet-rundaemon-'));
    exits = [];
    stderr = [];
    logged = [];
    writeSpy = jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      stderr.push(String(chunk));
      return true;
    });
  });
  afterEach(() => {
    writeSpy.mockRestore();
    rmSync(dir, { recursive: true, force: true });
  });

  const logger = () => pino({ level: 'info' }, { write: (line: string) => void logged.push((JSON.parse(line) as { msg: string }).msg) });
  const run = (daemon: Promise<Daemon> | (() => Promise<Daemon>), extra: Partial<RunDaemonOptions> = {}): Promise<number> =>
    runDaemon({
      command: 'spec',
      logger: logger(),
      backstopMs: 60_000,
      signals: [SIGNAL],
      exit: (code) => void exits.push(code),
      start: typeof daemon === 'function' ? daemon : () => daemon,
      ...extra,
    });

  it('writes the pid file before the daemon starts, and on the first signal stops it, removes the pid file and exits 0', async () => {
    const pid = join(dir, 'rxfleet.pid');
    const daemon = new ScriptedDaemon();
    let pidAtStart: string | undefined;
    const ran = run(
      async () => {
        pidAtStart = readFileSync(pid, 'utf8');
        return daemon;
      },
      { pidFile: pid },
    );
    await settle();
    expect(pidAtStart).toBe(`${process.pid}\n`);
    expect(existsSync(pid)).toBe(true);
    raise();
    expect(await ran).toBe(0);
    expect(daemon.calls).toEqual(['stop']);
    expect(exits).toEqual([0]);
    expect(existsSync(pid)).toBe(false);
    expect(logged).toContain(`${SIGNAL}: stopping (send it again to exit at once)`);
  });

  it('a second signal while the stop waits aborts the work in flight and exits 1 at once', async () => {
    const daemon = new ScriptedDaemon(false);
    const ran = run(Promise.resolve(daemon));
    await settle();
    raise();
    await settle();
    expect(exits).toEqual([]);
    raise();
    expect(await ran).toBe(1);
    expect(daemon.calls).toEqual(['stop', 'abort: exiting at once']);
    expect(exits).toEqual([1]);
  });

  it('a daemon that stops by itself, saying why, exits 1; one asked to stop exits 0', async () => {
    const failing = new ScriptedDaemon();
    const ran = run(Promise.resolve(failing));
    await settle();
    void failing.finish({ abandoned: 0, failed: 'the pipeline failed' });
    expect(await ran).toBe(1);
    expect(exits).toEqual([1]);
  });

  it('a signal while the daemon is still starting ends the process at once with 0, the pid file removed', async () => {
    const pid = join(dir, 'rxfleet.pid');
    const ran = run(() => new Promise<Daemon>(() => undefined), { pidFile: pid });
    await settle();
    expect(existsSync(pid)).toBe(true);
    raise();
    await waitForExit(exits);
    expect(exits).toEqual([0]);
    expect(existsSync(pid)).toBe(false);
    expect(logged).toContain('stopped');
    void ran;
  });

  it('an unwritable pid file is a configuration error: nothing starts, one line names it, exit 1', async () => {
    const pid = join(dir, 'missing', 'rxfleet.pid');
    const start = jest.fn(() => Promise.resolve(new ScriptedDaemon() as Daemon));
    expect(await run(start, { pidFile: pid })).toBe(1);
    expect(start).not.toHaveBeenCalled();
    expect(stderr.join('').trim().split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^error: ${pid}: --pid: cannot write the pid file: ENOENT`)),
      'rxfleet spec: not started: 1 configuration error',
    ]);
    expect(exits).toEqual([]);
  });

  it('a daemon that cannot start: a configuration error gets its line, anything else its reason; exit 1, the pid file removed', async () => {
    const pid = join(dir, 'rxfleet.pid');
    const busy = Object.assign(new Error('listen EADDRINUSE'), { code: 'EADDRINUSE' });
    const configurationError = (error: unknown) =>
      (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? 'error: f.yaml: monitor_port: port 9 is in use' : undefined;
    expect(await run(() => Promise.reject(busy), { pidFile: pid, configurationError })).toBe(1);
    expect(stderr.join('')).toBe('error: f.yaml: monitor_port: port 9 is in use\nrxfleet spec: not started: 1 configuration error\n');
    expect(existsSync(pid)).toBe(false);

    stderr.length = 0;
    expect(await run(() => Promise.reject(new Error('nats://u:secret@h:4222 refused')), { configurationError })).toBe(1);
    expect(stderr.join('')).toBe('rxfleet spec: nats://[redacted]@h:4222 refused\n');
    expect(logged.some((line) => line.startsWith('rxfleet spec could not start: '))).toBe(true);
    expect(exits).toEqual([]);
    expect(pendingExitCleanups()).toBe(0);
  });

  it('keeps an exit clean-up registered (abort the work, remove the pid file) exactly while the daemon runs', async () => {
    const daemon = new ScriptedDaemon();
    const before = pendingExitCleanups();
    const ran = run(Promise.resolve(daemon), { pidFile: join(dir, 'rxfleet.pid') });
    await settle();
    expect(pendingExitCleanups()).toBe(before + 1);
    raise();
    expect(await ran).toBe(0);
    expect(pendingExitCleanups()).toBe(before);
  });
});

async function waitForExit(exits: number[]): Promise<void> {
  for (let i = 0; i < 100 && exits.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
}
