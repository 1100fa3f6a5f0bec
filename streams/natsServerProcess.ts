import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { AddressInfo, createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanUpOnExit } from './exitCleanup';
import { definedFields } from '../lib/definedFields';

/** Options for {@link startNatsServer}. */
export interface NatsServerOptions {
  /** Enable JetStream with a store in the server's temporary directory. Default true. */
  jetstream?: boolean;
  /**
   * Extra configuration file text (accounts, users, authorization), appended after the listen
   * and JetStream settings this function writes. `{{dir}}` is replaced by the temporary directory.
   */
  config?: string;
  /** The executable. Default `nats-server` on PATH. */
  binary?: string;
  /** How long to wait for the server to accept connections. Default 10 s. */
  readyTimeoutMs?: number;
  /** Listen on this loopback port. Default a free one. */
  port?: number;
  /**
   * Run it with this group id (this process must be root): a cluster's servers each get their own,
   * so `iptables -m owner` can tell one server's route connections from another's.
   */
  gid?: number;
  /** `server_name`. Default `rxfleet_<port>`. */
  serverName?: string;
}

/** A private nats-server this process started and will stop. */
export interface NatsServerProcess {
  readonly url: string;
  readonly port: number;
  /** The temporary directory holding its configuration, store and log. */
  readonly dir: string;
  readonly pid: number;
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and removes its directory. Idempotent. */
  stop(): Promise<void>;
  /** Kills it at once (SIGKILL), keeping its directory, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same store (after `kill`). */
  restart(): Promise<void>;
}

/** Whether a `nats-server` executable can be run. */
export function natsServerAvailable(binary = 'nats-server'): boolean {
  return spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** A TCP port nothing listens on right now (the kernel picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Whether the server named `serverName` answers on the port: its first line is an `INFO` naming
 * it. A connection alone is not enough: another process, even another nats-server, may be
 * listening on the port this one failed to bind.
 */
function servesNats(port: number, serverName: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1000, () => done(false));
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\n');
      if (end !== -1 || head.length > 65_536)
        done(head.startsWith('INFO ') && head.slice(0, end).includes(`"server_name":${JSON.stringify(serverName)}`));
    });
    socket.once('error', () => done(false));
    socket.once('close', () => done(false));
  });
}

/**
 * Blocks until the process `pid` (a child of this one, so a zombie once dead) has died, or
 * `timeoutMs` has passed: for an `exit` handler, which cannot wait asynchronously. Reads
 * `/proc/<pid>/stat`; where there is no /proc it returns at once.
 */
function waitUntilDead(pid: number, timeoutMs: number): void {
  const tick = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    let state: string | undefined;
    try {
      state = /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
    } catch {
      return;
    }
    if (state === undefined || state === 'Z' || state === 'X') return;
    Atomics.wait(tick, 0, 0, 10);
  }
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

/**
 * A server that could not listen on a port it was given: another process took the port between
 * {@link freePort} finding it free and the server binding it (any outgoing connection on the
 * machine may be given it as its local port). Whoever picked the port can pick another.
 */
export class PortInUseError extends Error {
  override readonly name = 'PortInUseError';
}

/** Why a server that exited at start did: its log's last error line, as the error's message. */
function exitError(code: number, dir: string): Error {
  let log = '';
  try {
    log = readFileSync(join(dir, 'nats.log'), 'utf8');
  } catch {
    // No log written: the message says so by having none.
  }
  const reason = log
    .split('\n')
    .filter((line) => /\[(ERR|FTL)\]/.test(line))
    .pop();
  const message = `nats-server exited with ${code}${reason === undefined ? '' : `: ${reason.replace(/^.*?\[(ERR|FTL)\] /, '')}`}`;
  return /address already in use/.test(reason ?? '') ? new PortInUseError(message) : new Error(message);
}

/** Attempts at a start whose port another process took first (see {@link PortInUseError}). */
export const PORT_ATTEMPTS = 3;

/**
 * Starts a private `nats-server` on a free loopback port with its own temporary directory (config,
 * JetStream store, log), and resolves once it answers as itself (its `INFO` names it). Nothing is
 * shared with any other server on the machine; `stop()` removes every trace. A port it picked
 * itself that another process takes first is picked again, up to {@link PORT_ATTEMPTS} times.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnPort(options, options.port ?? (await freePort()));
    } catch (error) {
      if (!(error instanceof PortInUseError) || options.port !== undefined || attempt === PORT_ATTEMPTS) throw error;
    }
  }
}

async function startOnPort(options: NatsServerOptions, port: number): Promise<NatsServerProcess> {
  const { jetstream = true, config = '', binary = 'nats-server', readyTimeoutMs = 10_000 } = options;
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-nats-'));
  let child: ChildProcess | undefined;
  let stopped = false;
  // However this process ends (a second signal, a crash), the server and its store go with it:
  // killed, waited for (it must not write into the store after it is removed), then removed.
  const forget = cleanUpOnExit(() => {
    if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      waitUntilDead(child.pid, 2000);
    }
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 20 });
  });
  const confFile = join(dir, 'nats.conf');
  const serverName = options.serverName ?? `rxfleet_${port}`;
  const lines = [`listen: 127.0.0.1:${port}`, `server_name: ${serverName}`];
  if (jetstream) lines.push(`jetstream: { store_dir: "${join(dir, 'js')}" }`);
  writeFileSync(confFile, `${lines.join('\n')}\n${config.replaceAll('{{dir}}', dir)}\n`);

  const launch = async (): Promise<void> => {
    const started = spawn(binary, ['-c', confFile, '-l', join(dir, 'nats.log')], {
      stdio: 'ignore',
      ...definedFields({ gid: options.gid }),
    });
    child = started;
    const spawnError = new Promise<never>((_, reject) => started.once('error', reject));
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (started.exitCode !== null) throw exitError(started.exitCode, dir);
      if (await Promise.race([servesNats(port, serverName), spawnError])) return;
      if (Date.now() > deadline) throw new Error(`nats-server did not accept connections on ${port} within ${readyTimeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };

  try {
    await launch();
  } catch (error) {
    if (child !== undefined && child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    forget();
    throw error;
  }

  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    dir,
    get pid() {
      return child?.pid ?? -1;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      const running = child as ChildProcess;
      running.kill('SIGTERM');
      const killer = setTimeout(() => running.kill('SIGKILL'), 5000);
      await exited(running);
      clearTimeout(killer);
      rmSync(dir, { recursive: true, force: true });
      forget();
    },
    async kill() {
      const running = child as ChildProcess;
      running.kill('SIGKILL');
      await exited(running);
    },
    async restart() {
      await launch();
    },
  };
}
