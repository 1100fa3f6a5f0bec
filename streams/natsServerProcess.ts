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

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
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
 * Starts a private `nats-server` on a free loopback port with its own temporary directory (config,
 * JetStream store, log), and resolves once it accepts connections. Nothing is shared with any
 * other server on the machine; `stop()` removes every trace.
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServerProcess> {
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
  const port = options.port ?? (await freePort());
  const confFile = join(dir, 'nats.conf');
  const lines = [`listen: 127.0.0.1:${port}`, `server_name: ${options.serverName ?? `rxfleet_${port}`}`];
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
      if (started.exitCode !== null) throw new Error(`nats-server exited with ${started.exitCode} (see ${join(dir, 'nats.log')})`);
      if (await Promise.race([canConnect(port), spawnError])) return;
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
