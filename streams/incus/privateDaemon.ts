import { ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanUpOnExit } from '../exitCleanup';
import { freeSubnet, imageBuildScript, killPrivateDaemon, privateDaemonLeftovers, privateDaemonPreseed, processesOf } from './daemonHost';
import { DaemonKind, DaemonProgram, daemonProgram, daemonUnavailable } from './daemonKind';

/**
 * A private Incus or LXD daemon started at run time (`rxfleet demo --incus`, the specs, the
 * benches): its own directory (`INCUS_DIR`/`LXD_DIR`, with the client's `INCUS_CONF`/`LXD_CONF`
 * in it) under the temporary directory, its own bridge with no firewall or NAT, a `dir` pool, and
 * the offline busybox image (`scripts/lxd/build-image.sh`) imported as `bbx`. Nothing is shared
 * with a system daemon or another private one. The temporary directory's parents must be
 * traversable by an unprivileged container's mapped root (`/tmp` is; a 0700 `TMPDIR` is not).
 */
export interface PrivateDaemon {
  readonly kind: DaemonKind;
  readonly program: DaemonProgram;
  /** Its `INCUS_DIR` or `LXD_DIR`. */
  readonly dir: string;
  /** Its unix socket (`<dir>/unix.socket`): what an Incus client connects to. */
  readonly socket: string;
  /** The environment its client and admin commands run in. */
  readonly env: NodeJS.ProcessEnv;
  /** The managed bridge of the default profile's eth0. */
  readonly bridge: string;
  /** The bridge's gateway address with prefix, e.g. `10.123.45.1/24`. */
  readonly gateway: string;
  /** The daemon's pid (changes on restart), -1 when not running. */
  readonly pid: number;
  /** The image alias instances are launched from. */
  readonly image: string;
  /** Runs the client (`incus`/`lxc`) against this daemon; resolves its stdout, rejects with its stderr. */
  client(args: string[], input?: string): Promise<string>;
  /** Launches an instance of the busybox image with these configuration keys. */
  launch(name: string, config?: Record<string, string>, project?: string): Promise<void>;
  /** A fresh /24 prefix (`10.x.y`) no route or other bridge of this daemon uses. */
  freeSubnet(): string;
  /** Names a bridge this daemon made, so a stop deletes it even when the daemon cannot. */
  ownsBridge(name: string): void;
  /** Shuts the daemon down (its instances stop), then starts it again on the same directory. */
  restart(): Promise<void>;
  /** Kills the daemon's process (SIGKILL), as a crash would: its instances keep running. */
  kill(): Promise<void>;
  /** The process, for signals (SIGSTOP, SIGCONT). */
  readonly process: ChildProcess | undefined;
  /** What of it still exists: processes, bridges, mounts, iptables rules, its directory. */
  leftovers(): string[];
  /**
   * Shuts the daemon down (its instances with it), kills what survives, deletes its bridges,
   * unmounts and removes its directory; rejects if anything is left. Idempotent.
   */
  stop(): Promise<void>;
}

/** Options of {@link startPrivateDaemon}. */
export interface PrivateDaemonOptions {
  /** The busybox image tarball to import; by default it is built into the daemon's directory. */
  imageTarball?: (dir: string) => Promise<string>;
}

const IMAGE_ALIAS = 'bbx';

/** Runs a program; resolves its stdout, rejects with its stderr. Stdin gets `input` (or is closed). */
export function runProgram(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000, input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
    // `incus launch` and `lxc launch` read a configuration from a stdin that is not a terminal.
    child.stdin?.end(input);
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

const running = (child: ChildProcess | undefined): child is ChildProcess =>
  child !== undefined && child.exitCode === null && child.signalCode === null;

/**
 * Starts a private daemon of `kind` ready to launch instances, or throws (with the reason of
 * {@link daemonUnavailable} when it cannot run here). From the moment its directory exists until
 * `stop` resolves, an exit of the process however it happens (a second signal, a crash) kills its
 * processes, deletes its bridges and removes its directory synchronously.
 */
export async function startPrivateDaemon(kind: DaemonKind, options: PrivateDaemonOptions = {}): Promise<PrivateDaemon> {
  const unavailable = daemonUnavailable(kind);
  if (unavailable !== undefined) throw new Error(unavailable);
  const program = daemonProgram(kind);
  const dir = mkdtempSync(join(tmpdir(), `rxfleet-${kind}-`));
  // Unprivileged containers run as a mapped uid that must be able to reach their rootfs.
  chmodSync(dir, 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, [program.dirVariable]: dir, [program.confVariable]: join(dir, 'client') };
  const subnets = new Set<string>();
  const bridges = new Set<string>();
  let child: ChildProcess | undefined;
  const forgetExitCleanup = cleanUpOnExit(() => {
    killPrivateDaemon(dir, bridges, child?.pid !== undefined ? [child.pid] : []);
    rmSync(dir, { recursive: true, force: true });
  });
  const [adminFile, ...adminArgs] = program.admin;
  const admin = (args: string[], timeoutMs: number, input?: string): Promise<string> =>
    runProgram(adminFile, [...adminArgs, ...args], env, timeoutMs, input);
  const client = (args: string[], input?: string): Promise<string> => runProgram(program.client, args, env, 120_000, input);

  const launchDaemon = async (): Promise<void> => {
    // Its own session (setsid): a terminal's ^C reaches rxfleet, which stops the daemon in order.
    child = spawn(program.daemon, ['--group', 'root', '--logfile', join(dir, `${kind}d.log`)], { env, stdio: 'ignore', detached: true });
    const failedToSpawn = new Promise<never>((_, reject) => child?.once('error', reject));
    await Promise.race([admin(['waitready', '--timeout=60'], 70_000), failedToSpawn]);
  };
  const shutdown = (): Promise<void> => shutDown(child, admin);
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await shutdown();
      // What a clean shutdown leaves nothing of, a failed one may: dnsmasq, monitors, instances.
      killPrivateDaemon(dir, bridges);
      rmSync(dir, { recursive: true, force: true });
      for (let i = 0; i < 20 && processesOf(dir).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      forgetExitCleanup();
      const left = privateDaemonLeftovers(dir, bridges);
      if (left.length > 0) throw new Error(`the private ${program.title} daemon left behind: ${left.join('; ')}`);
    })();
    return stopping;
  };

  const prefix = freeSubnet(subnets);
  const bridge = `rxbr${randomBytes(3).toString('hex')}`;
  bridges.add(bridge);
  try {
    await launchDaemon();
    await admin(['init', '--preseed'], 60_000, privateDaemonPreseed(bridge, prefix));
    const tarball = options.imageTarball !== undefined ? await options.imageTarball(dir) : await buildImage(dir);
    await client(['image', 'import', tarball, '--alias', IMAGE_ALIAS]);
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return {
    kind,
    program,
    dir,
    socket: join(dir, 'unix.socket'),
    env,
    bridge,
    gateway: `${prefix}.1/24`,
    get pid() {
      return running(child) ? (child.pid ?? -1) : -1;
    },
    get process() {
      return child;
    },
    image: IMAGE_ALIAS,
    client,
    async launch(name, config = {}, project) {
      const flags = [
        ...(project === undefined ? [] : ['--project', project]),
        ...Object.entries(config).flatMap(([k, v]) => ['-c', `${k}=${v}`]),
      ];
      await client(['launch', IMAGE_ALIAS, name, ...flags]);
    },
    freeSubnet: () => freeSubnet(subnets),
    ownsBridge: (name) => void bridges.add(name),
    async restart() {
      await shutdown();
      await launchDaemon();
    },
    async kill() {
      const daemon = child;
      if (!running(daemon)) return;
      daemon.kill('SIGKILL');
      await exited(daemon);
    },
    leftovers: () => privateDaemonLeftovers(dir, bridges),
    stop,
  };
}

/**
 * Asks a running daemon to shut down (its instances with it), waking it first in case it was
 * stopped (SIGSTOP), and kills it if it has not exited 30 s after the request ends.
 */
async function shutDown(daemon: ChildProcess | undefined, admin: (args: string[], timeoutMs: number) => Promise<string>): Promise<void> {
  if (!running(daemon)) return;
  daemon.kill('SIGCONT');
  await admin(['shutdown', '--timeout=60'], 70_000).catch(() => undefined);
  const killer = setTimeout(() => daemon.kill('SIGKILL'), 30_000);
  await exited(daemon);
  clearTimeout(killer);
}

async function buildImage(dir: string): Promise<string> {
  const scratch = join(dir, 'image');
  await runProgram('sh', [imageBuildScript(), scratch], process.env);
  return `${scratch}.tar.gz`;
}
