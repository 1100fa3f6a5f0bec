import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanUpOnExit } from '../../../streams/exitCleanup';
import { CHORIA_PROVISIONING_JWT, choriaBinary } from '../goPeers';

/** Options for {@link startChoriaServers}. */
export interface ChoriaServersOptions {
  /** The site's directory: each server gets `<dir>/servers/<identity>/`. */
  dir: string;
  count: number;
  /** The provisioning JWT every server starts with (`choria jwt prov`). */
  provisioningJwt: string;
  /** Identities are `n<NN>.<domain>` (two dots at least, so go-choria takes the host name as is). */
  domain: string;
  /**
   * How long after a failure the server is started again: go-choria's RPM units say
   * `Restart=on-failure`, `RestartSec=5s`. Default 1 s here.
   */
  restartDelayMs?: number;
}

/** One real go-choria server. */
export interface ChoriaServer {
  readonly identity: string;
  /** Its directory: `server.conf` (rewritten by `configure`), `provisioning.jwt`, `ssl/`, `server.log`. */
  readonly dir: string;
  readonly configFile: string;
  /** What it has logged (stdout and stderr, every run). */
  log(): string;
  /** Whether a process runs for it now. */
  running(): boolean;
  /** How many times it was started again after a failure. */
  restarts(): number;
  /** SIGKILL: the service manager starts it again after the delay, as after any failure. */
  kill(): void;
}

/** N real go-choria servers in provisioning mode, each a host of its own. */
export interface ChoriaServers {
  readonly servers: readonly ChoriaServer[];
  readonly identities: readonly string[];
  /** Stops every server for good (SIGTERM, SIGKILL after 5 s). */
  stop(): Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

/**
 * Starts `count` go-choria servers (`choria server run`), each in its own directory with its own
 * `server.conf` and copy of the provisioning JWT, each in its own UTS namespace with its own host
 * name, which is what gives a provisioning-mode server its identity (its configuration is replaced
 * by provisioning defaults, the identity coming from the host name). The process runs under a
 * small service manager: `restart` re-executes itself in place (go-choria's `syscall.Exec`, same
 * pid); a process that fails (non-zero exit, or killed) is started again after the delay, as
 * `Restart=on-failure` does; a clean exit (`shutdown`) stays down. Needs root (`unshare --uts`).
 */
export function startChoriaServers(options: ChoriaServersOptions): ChoriaServers {
  const restartDelayMs = options.restartDelayMs ?? 1000;
  let stopping = false;
  const children = new Set<ChildProcess>();
  const timers = new Set<NodeJS.Timeout>();
  const forget = cleanUpOnExit(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  const servers: ChoriaServer[] = [];
  for (let i = 1; i <= options.count; i++) {
    const identity = `n${String(i).padStart(2, '0')}.${options.domain}`;
    const dir = join(options.dir, 'servers', identity);
    mkdirSync(dir, { recursive: true });
    copyFileSync(options.provisioningJwt, join(dir, CHORIA_PROVISIONING_JWT));
    const configFile = join(dir, 'server.conf');
    writeFileSync(configFile, 'loglevel = info\nplugin.choria.stats_port = 0\n');
    const logFile = join(dir, 'server.log');
    let child: ChildProcess | undefined;
    let restarts = 0;

    const launch = (): void => {
      const out = openSync(logFile, 'a');
      const started = spawn(
        'unshare',
        ['--uts', '--', 'sh', '-c', 'hostname "$0" && exec "$@"', identity, choriaBinary(), 'server', 'run', '--config', configFile],
        { cwd: dir, stdio: ['ignore', out, out] },
      );
      closeSync(out);
      child = started;
      children.add(started);
      started.once('exit', (code, signal) => {
        children.delete(started);
        if (stopping || (code === 0 && signal === null)) return;
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (stopping) return;
          restarts++;
          launch();
        }, restartDelayMs);
        timers.add(timer);
      });
    };
    launch();

    servers.push({
      identity,
      dir,
      configFile,
      log: () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : ''),
      running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
      restarts: () => restarts,
      kill: () => void child?.kill('SIGKILL'),
    });
  }

  return {
    servers,
    identities: servers.map((s) => s.identity),
    async stop() {
      stopping = true;
      for (const timer of timers) clearTimeout(timer);
      const running = [...children];
      for (const child of running) child.kill('SIGTERM');
      const kill = setTimeout(() => running.forEach((c) => c.kill('SIGKILL')), 5000);
      await Promise.all(running.map(exited));
      clearTimeout(kill);
      forget();
    },
  };
}
