import { ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanUpOnExit } from '../exitCleanup';
import {
  freeSubnet,
  imageBuildScript,
  killPrivateLxd,
  privateLxdLeftovers,
  privateLxdPreseed,
  privateLxdUnavailable,
  processesOf,
} from './lxdHost';

/**
 * A private LXD daemon started at run time (`rxfleet demo --incus`): its own `LXD_DIR` in a
 * temporary directory, its own bridge with no firewall or NAT, the offline busybox image
 * (`scripts/lxd/build-image.sh`) imported as `bbx`. Nothing is shared with a system LXD. Its
 * directory is made under the temporary directory, whose parents an unprivileged container's
 * mapped root must be able to traverse (`/tmp` is; a 0700 `TMPDIR` is not).
 */
export interface PrivateLxd {
  /** Its `LXD_DIR`. */
  readonly dir: string;
  /** Its unix socket, for an Incus client. */
  readonly socket: string;
  /** Launches an instance of the busybox image with these configuration keys. */
  launch(name: string, config?: Record<string, string>): Promise<void>;
  /**
   * Shuts the daemon down (its instances with it), kills what survives, deletes its bridge,
   * unmounts and removes its directory; rejects if anything is left. Idempotent.
   */
  stop(): Promise<void>;
}

const IMAGE_ALIAS = 'bbx';

function run(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000, input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, args, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
    // `lxc launch` reads a configuration from a stdin that is not a terminal: give it an empty one.
    child.stdin?.end(input);
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

/**
 * Starts a private LXD daemon ready to launch instances, or throws (with the reason of
 * {@link privateLxdUnavailable} when it cannot run here). From the moment its directory exists
 * until `stop` resolves, an exit of the process however it happens (a second signal, a crash)
 * kills its processes, deletes its bridge and removes its directory synchronously.
 */
export async function startPrivateLxd(): Promise<PrivateLxd> {
  const unavailable = privateLxdUnavailable();
  if (unavailable !== undefined) throw new Error(unavailable);
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-lxd-'));
  // Unprivileged containers run as a mapped uid that must be able to reach their rootfs.
  chmodSync(dir, 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, LXD_DIR: dir, LXD_CONF: join(dir, 'client') };
  const bridges = new Set<string>();
  let child: ChildProcess | undefined;
  const forgetExitCleanup = cleanUpOnExit(() => {
    killPrivateLxd(dir, bridges, child?.pid !== undefined ? [child.pid] : []);
    rmSync(dir, { recursive: true, force: true });
  });
  const lxc = (...args: string[]): Promise<string> => run('lxc', args, env);

  const shutdown = async (): Promise<void> => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    await run('lxd', ['shutdown', '--timeout=30'], env, 40_000).catch(() => undefined);
    const killer = setTimeout(() => running.kill('SIGKILL'), 15_000);
    await exited(running);
    clearTimeout(killer);
  };
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await shutdown();
      // What a clean shutdown leaves nothing of, a failed one may: dnsmasq, monitors, instances.
      killPrivateLxd(dir, bridges);
      rmSync(dir, { recursive: true, force: true });
      for (let i = 0; i < 20 && processesOf(dir).length > 0; i++) await new Promise((r) => setTimeout(r, 100));
      forgetExitCleanup();
      const left = privateLxdLeftovers(dir, bridges);
      if (left.length > 0) throw new Error(`the private LXD daemon left behind: ${left.join('; ')}`);
    })();
    return stopping;
  };

  try {
    child = spawn('lxd', ['--group', 'root', '--logfile', join(dir, 'lxd.log')], { env, stdio: 'ignore' });
    const failedToSpawn = new Promise<never>((_, reject) => child?.once('error', reject));
    await Promise.race([run('lxd', ['waitready', '--timeout=60'], env, 70_000), failedToSpawn]);
    const bridge = `rxbr${randomBytes(3).toString('hex')}`;
    bridges.add(bridge);
    await run('lxd', ['init', '--preseed'], env, 60_000, privateLxdPreseed(bridge, freeSubnet(new Set())));
    const scratch = join(dir, 'image');
    await run('sh', [imageBuildScript(), scratch], process.env);
    await lxc('image', 'import', `${scratch}.tar.gz`, '--alias', IMAGE_ALIAS);
    rmSync(`${scratch}.tar.gz`, { force: true });
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }
  return {
    dir,
    socket: join(dir, 'unix.socket'),
    async launch(name, config = {}) {
      await lxc('launch', IMAGE_ALIAS, name, ...Object.entries(config).flatMap(([k, v]) => ['-c', `${k}=${v}`]));
    },
    stop,
  };
}
