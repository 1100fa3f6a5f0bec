import { ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  freeSubnet,
  imageBuildScript,
  killPrivateLxd,
  privateLxdLeftovers,
  privateLxdPreseed,
  privateLxdUnavailable,
  processesOf,
} from '../../streams/incus/lxdHost';

/**
 * A private LXD daemon for a test suite: its own `LXD_DIR` under the temporary directory, its own
 * managed bridge (unique name and /24, `ipv4.firewall=false ipv4.nat=false` so no iptables rule is
 * ever written), a `dir` storage pool, a default profile with root and eth0, and the offline
 * busybox image imported as `bbx`, whose instances start and take a DHCP lease in a second or two.
 *
 * Needs root and the Debian packages `lxd iptables dnsmasq-base busybox-static` (`.ci/run`
 * installs them). Nothing is shared with the system daemon or with another suite's daemon.
 */
export interface LxdDaemon {
  /** Its `LXD_DIR`. */
  readonly dir: string;
  /** Its unix socket: what the client under test connects to. */
  readonly socket: string;
  /** The managed bridge of the default profile's eth0. */
  readonly bridge: string;
  /** The bridge's gateway address with prefix, e.g. `10.123.45.1/24`. */
  readonly gateway: string;
  /** The daemon's pid (changes on restart). */
  readonly pid: number;
  /** The image alias instances are launched from. */
  readonly image: string;
  /** Runs `lxc` against this daemon; resolves its stdout, rejects with its stderr. */
  lxc(...args: string[]): Promise<string>;
  /** `lxc query` (GET) of an API path, parsed. */
  query<T = unknown>(path: string): Promise<T>;
  /** Launches an instance from the test image (in `project`, default `default`). */
  launch(name: string, options?: { project?: string; config?: Record<string, string> }): Promise<void>;
  /** Polls the instance's state until eth0 has a global IPv4 address, and returns it. */
  waitForIPv4(name: string, options?: { project?: string; timeoutMs?: number }): Promise<string>;
  /** Stops an instance (`--force` unless `clean`). */
  stopInstance(name: string, options?: { project?: string; clean?: boolean }): Promise<void>;
  /** Renames a stopped instance. */
  rename(from: string, to: string, options?: { project?: string }): Promise<void>;
  /** Deletes an instance, running or not. */
  deleteInstance(name: string, options?: { project?: string }): Promise<void>;
  /** Sets one configuration key of an instance. */
  setInstanceConfig(name: string, key: string, value: string, options?: { project?: string }): Promise<void>;
  /** Sets one configuration key of a profile. */
  setProfileConfig(profile: string, key: string, value: string, options?: { project?: string }): Promise<void>;
  /**
   * Creates a managed bridge with a fresh unique /24 and no firewall or NAT rules; returns its
   * gateway address with prefix. The name must be at most 15 characters.
   */
  createNetwork(name: string, config?: Record<string, string>): Promise<string>;
  setNetworkConfig(name: string, key: string, value: string): Promise<void>;
  deleteNetwork(name: string): Promise<void>;
  /**
   * Creates a project. By default it shares the default project's images and profiles
   * (`features.images=false`, `features.profiles=false`), so instances launch in it at once; with
   * either feature on, the image is imported into it or its default profile gets root and eth0.
   */
  createProject(name: string, config?: Record<string, string>): Promise<void>;
  setProjectConfig(name: string, key: string, value: string): Promise<void>;
  deleteProject(name: string): Promise<void>;
  /** `lxd shutdown` (which stops the instances), then starts the daemon again on the same directory; instances that were running start again. */
  restart(): Promise<void>;
  /** Kills the daemon's process (SIGKILL), as a crash would: its instances keep running; `restart()` brings it back. */
  kill(): Promise<void>;
  /** Stops the daemon's process (SIGSTOP) without closing anything, and resolves once every thread of it has stopped: its sockets go silent. */
  freeze(): Promise<void>;
  /** Resumes a frozen daemon (SIGCONT). */
  thaw(): void;
  /** What of this daemon still exists: processes, bridges, mounts, iptables rules, its directory. */
  leftovers(): string[];
  /**
   * Shuts the daemon down, kills whatever of it survives, deletes its bridges, unmounts and removes
   * its directory, then rejects if anything is left. Idempotent.
   */
  stop(): Promise<void>;
}

const IMAGE_ALIAS = 'bbx';

/** Why LXD integration specs cannot run here, or `undefined` when they can. */
export function lxdUnavailable(): string | undefined {
  return privateLxdUnavailable()?.replace(/^a private LXD daemon needs/, 'the LXD integration specs need');
}

/** A name no other suite or run will pick: `prefix` + 6 hex digits. */
export function uniqueName(prefix: string): string {
  return `${prefix}${randomBytes(3).toString('hex')}`;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(file, args, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')}: ${stderr.trim() || error.message}`));
      else resolvePromise(stdout);
    });
    // `lxc launch` and `lxc init` read a configuration from a stdin that is not a terminal.
    child.stdin?.end();
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The offline busybox image, built once per jest run into the run's directory (see runDirSetup). */
async function testImage(fallbackDir: string): Promise<string> {
  const runDir = process.env.RXFLEET_RUN_DIR;
  const dir = runDir !== undefined && existsSync(runDir) ? runDir : fallbackDir;
  const image = join(dir, 'lxd-busybox.tar.gz');
  if (existsSync(image)) return image;
  // Built under a private name, then renamed: a concurrent suite never sees half a tarball.
  const scratch = join(dir, `image-${process.pid}-${randomBytes(3).toString('hex')}`);
  await run('sh', [imageBuildScript(), scratch], process.env);
  renameSync(`${scratch}.tar.gz`, image);
  return image;
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once('exit', () => r()));
}

/** Starts a private LXD daemon ready to launch instances. See {@link LxdDaemon}. */
export async function startLxdDaemon(): Promise<LxdDaemon> {
  const unavailable = lxdUnavailable();
  if (unavailable !== undefined) throw new Error(unavailable);
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-lxd-'));
  // Unprivileged containers run as a mapped uid that must be able to reach their rootfs.
  chmodSync(dir, 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, LXD_DIR: dir, LXD_CONF: join(dir, 'client') };
  const subnets = new Set<string>();
  const bridges = new Set<string>();
  let child: ChildProcess | undefined;
  let stopped = false;

  const launchDaemon = async (): Promise<void> => {
    child = spawn('lxd', ['--group', 'root', '--logfile', join(dir, 'lxd.log')], { env, stdio: 'ignore' });
    const failedToSpawn = new Promise<never>((_, reject) => child?.once('error', reject));
    await Promise.race([run('lxd', ['waitready', '--timeout=60'], env, 70_000), failedToSpawn]);
  };

  const lxc = (...args: string[]): Promise<string> => run('lxc', args, env);
  const projectFlag = (project?: string): string[] => (project === undefined ? [] : ['--project', project]);

  const shutdown = async (): Promise<void> => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
    try {
      await run('lxd', ['shutdown', '--timeout=60'], env, 70_000);
    } catch {
      // a daemon that will not shut down is killed below
    }
    const killer = setTimeout(() => running.kill('SIGKILL'), 30_000);
    await exited(running);
    clearTimeout(killer);
  };

  const leftovers = (): string[] => privateLxdLeftovers(dir, bridges);

  try {
    await launchDaemon();
    const prefix = freeSubnet(subnets);
    const bridge = uniqueName('rxbr');
    bridges.add(bridge);
    const preseed = privateLxdPreseed(bridge, prefix);
    await new Promise<void>((resolvePromise, reject) => {
      const init = spawn('lxd', ['init', '--preseed'], { env, stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      init.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      init.on('error', reject);
      init.on('exit', (code) => (code === 0 ? resolvePromise() : reject(new Error(`lxd init --preseed: ${stderr.trim()}`))));
      init.stdin.end(preseed);
    });
    const image = await testImage(dir);
    await lxc('image', 'import', image, '--alias', IMAGE_ALIAS);

    const daemon: LxdDaemon = {
      dir,
      socket: join(dir, 'unix.socket'),
      bridge,
      gateway: `${prefix}.1/24`,
      get pid() {
        return child?.pid ?? -1;
      },
      image: IMAGE_ALIAS,
      lxc,
      async query<T>(path: string) {
        return JSON.parse(await lxc('query', path)) as T;
      },
      async launch(name, options = {}) {
        const config = Object.entries(options.config ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`]);
        await lxc('launch', IMAGE_ALIAS, name, ...projectFlag(options.project), ...config);
      },
      async waitForIPv4(name, options = {}) {
        const deadline = Date.now() + (options.timeoutMs ?? 30_000);
        const path = `/1.0/instances/${name}/state?project=${options.project ?? 'default'}`;
        for (;;) {
          const state = await daemon.query<{
            network?: Record<string, { addresses: Array<{ family: string; scope: string; address: string }> }> | null;
          }>(path);
          const address = state.network?.eth0?.addresses.find((a) => a.family === 'inet' && a.scope === 'global');
          if (address !== undefined) return address.address;
          if (Date.now() > deadline) throw new Error(`${name} got no IPv4 address`);
          await sleep(100);
        }
      },
      async stopInstance(name, options = {}) {
        await lxc('stop', name, ...projectFlag(options.project), ...(options.clean === true ? [] : ['--force']));
      },
      async rename(from, to, options = {}) {
        await lxc('rename', from, to, ...projectFlag(options.project));
      },
      async deleteInstance(name, options = {}) {
        await lxc('delete', name, '--force', ...projectFlag(options.project));
      },
      async setInstanceConfig(name, key, value, options = {}) {
        await lxc('config', 'set', name, `${key}=${value}`, ...projectFlag(options.project));
      },
      async setProfileConfig(profile, key, value, options = {}) {
        await lxc('profile', 'set', profile, `${key}=${value}`, ...projectFlag(options.project));
      },
      async createNetwork(name, config = {}) {
        const net = freeSubnet(subnets);
        bridges.add(name);
        const settings = {
          'ipv4.address': `${net}.1/24`,
          'ipv6.address': 'none',
          'ipv4.firewall': 'false',
          'ipv4.nat': 'false',
          ...config,
        };
        await lxc('network', 'create', name, ...Object.entries(settings).map(([k, v]) => `${k}=${v}`));
        return settings['ipv4.address'];
      },
      async setNetworkConfig(name, key, value) {
        await lxc('network', 'set', name, `${key}=${value}`);
      },
      async deleteNetwork(name) {
        await lxc('network', 'delete', name);
      },
      async createProject(name, config = {}) {
        const settings = { 'features.images': 'false', 'features.profiles': 'false', ...config };
        await lxc('project', 'create', name, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]));
        if (settings['features.images'] === 'true')
          await lxc('image', 'import', await testImage(dir), '--alias', IMAGE_ALIAS, '--project', name);
        if (settings['features.profiles'] === 'true') {
          await lxc('profile', 'device', 'add', 'default', 'root', 'disk', 'path=/', 'pool=default', '--project', name);
          await lxc('profile', 'device', 'add', 'default', 'eth0', 'nic', 'name=eth0', `network=${bridge}`, '--project', name);
        }
      },
      async setProjectConfig(name, key, value) {
        await lxc('project', 'set', name, `${key}=${value}`);
      },
      async deleteProject(name) {
        await lxc('project', 'delete', name);
      },
      async restart() {
        await shutdown();
        await launchDaemon();
      },
      async kill() {
        const running = child;
        if (running === undefined || running.exitCode !== null || running.signalCode !== null) return;
        running.kill('SIGKILL');
        await exited(running);
      },
      async freeze() {
        const pid = child?.pid;
        if (pid === undefined) return;
        process.kill(pid, 'SIGSTOP');
        // The stop reaches each thread on its own; until all are stopped one may still answer.
        const stopped = (): boolean =>
          readdirSync(`/proc/${pid}/task`).every((task) => {
            const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
            return /^[tT]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
          });
        while (!stopped()) await sleep(10);
      },
      thaw() {
        child?.kill('SIGCONT');
      },
      leftovers,
      async stop() {
        if (stopped) return;
        stopped = true;
        await cleanUp();
      },
    };
    return daemon;
  } catch (error) {
    await cleanUp().catch(() => undefined);
    throw error;
  }

  async function cleanUp(): Promise<void> {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill('SIGCONT');
    await shutdown();
    // What a clean shutdown leaves nothing of, a failed one may: dnsmasq, instance monitors and
    // the instances under them.
    killPrivateLxd(dir, bridges);
    rmSync(dir, { recursive: true, force: true });
    for (let i = 0; i < 20 && processesOf(dir).length > 0; i++) await sleep(100);
    const left = leftovers();
    if (left.length > 0) throw new Error(`the test LXD daemon left behind:\n  ${left.join('\n  ')}`);
  }
}

/**
 * A private LXD daemon for one suite: started in `beforeAll`, stopped in `afterAll` (which fails if
 * anything of it survives). Read `lxd()` inside tests.
 */
export function useLxdDaemon(): () => LxdDaemon {
  let daemon: LxdDaemon | undefined;
  beforeAll(async () => {
    daemon = await startLxdDaemon();
  }, 180_000);
  afterAll(async () => {
    await daemon?.stop();
  }, 180_000);
  return () => {
    if (daemon === undefined) throw new Error('the LXD daemon has not started (use it inside a test)');
    return daemon;
  };
}
