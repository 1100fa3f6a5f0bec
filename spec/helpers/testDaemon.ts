import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { imageBuildScript } from '../../streams/incus/daemonHost';
import { DAEMON_KINDS, DaemonKind, daemonUnavailable } from '../../streams/incus/daemonKind';
import { PrivateDaemon, runProgram, startPrivateDaemon } from '../../streams/incus/privateDaemon';

export { DAEMON_KINDS };
export type { DaemonKind };

/**
 * A private Incus or LXD daemon for a test suite (streams/incus/privateDaemon.ts): its own
 * directory under the temporary directory, its own managed bridge (unique name and /24,
 * `ipv4.firewall=false ipv4.nat=false` so no iptables rule is ever written), a `dir` storage pool,
 * a default profile with root and eth0, and the offline busybox image imported as `bbx`, whose
 * instances start and take a DHCP lease in a second or two.
 *
 * Needs root and the Debian packages `incus-base incus-client` (bookworm-backports) and `lxd`,
 * with `iptables dnsmasq-base busybox-static` (`npm test`'s prerequisites install them). Nothing is
 * shared with a system daemon or with another suite's daemon.
 */
export interface TestDaemon {
  readonly kind: DaemonKind;
  /** `Incus` or `LXD`, for test names. */
  readonly title: string;
  /** Its `INCUS_DIR` or `LXD_DIR`. */
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
  /** Runs the daemon's client (`incus` or `lxc`); resolves its stdout, rejects with its stderr. */
  cli(...args: string[]): Promise<string>;
  /** `incus query`/`lxc query` (GET) of an API path, parsed. */
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
  /**
   * Trusts a client certificate (`incus config trust add-certificate FILE --name N`, on LXD
   * `lxc config trust add FILE --name N`), restricted to `projects` when given.
   */
  trustCertificate(file: string, name: string, options?: { projects?: string[] }): Promise<void>;
  /** Listens on `127.0.0.1:port` for HTTPS (`core.https_address`). */
  listenHttps(port: number): Promise<void>;
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
   * Incus's projects also default `features.networks*` on; they are set as on LXD (off) unless given.
   */
  createProject(name: string, config?: Record<string, string>): Promise<void>;
  setProjectConfig(name: string, key: string, value: string): Promise<void>;
  deleteProject(name: string): Promise<void>;
  /** Shuts the daemon down (which stops the instances), then starts it again on the same directory; instances that were running start again. */
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

/** Why the daemon integration specs of `kind` cannot run here, or `undefined` when they can. */
export function daemonSpecsUnavailable(kind: DaemonKind): string | undefined {
  return daemonUnavailable(kind)?.replace(/^a private (\w+) daemon needs/, 'the $1 integration specs need');
}

/** A name no other suite or run will pick: `prefix` + 6 hex digits. */
export function uniqueName(prefix: string): string {
  return `${prefix}${randomBytes(3).toString('hex')}`;
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
  await runProgram('sh', [imageBuildScript(), scratch], process.env);
  renameSync(`${scratch}.tar.gz`, image);
  return image;
}

/** Starts a private daemon of `kind` ready to launch instances. See {@link TestDaemon}. */
export async function startTestDaemon(kind: DaemonKind): Promise<TestDaemon> {
  const unavailable = daemonSpecsUnavailable(kind);
  if (unavailable !== undefined) throw new Error(unavailable);
  const base: PrivateDaemon = await startPrivateDaemon(kind, { imageTarball: testImage });
  const cli = (...args: string[]): Promise<string> => base.client(args);
  const projectFlag = (project?: string): string[] => (project === undefined ? [] : ['--project', project]);
  const daemon: TestDaemon = {
    kind,
    title: base.program.title,
    dir: base.dir,
    socket: base.socket,
    bridge: base.bridge,
    gateway: base.gateway,
    get pid() {
      return base.pid;
    },
    image: base.image,
    cli,
    async query<T>(path: string) {
      return JSON.parse(await cli('query', path)) as T;
    },
    async launch(name, options = {}) {
      await base.launch(name, options.config, options.project);
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
      await cli('stop', name, ...projectFlag(options.project), ...(options.clean === true ? [] : ['--force']));
    },
    async rename(from, to, options = {}) {
      await cli('rename', from, to, ...projectFlag(options.project));
    },
    async deleteInstance(name, options = {}) {
      await cli('delete', name, '--force', ...projectFlag(options.project));
    },
    async trustCertificate(file, name, options = {}) {
      const add = kind === 'incus' ? ['config', 'trust', 'add-certificate'] : ['config', 'trust', 'add'];
      const restricted = options.projects === undefined ? [] : ['--restricted', '--projects', options.projects.join(',')];
      await cli(...add, file, '--name', name, ...restricted);
    },
    async listenHttps(port) {
      await cli('config', 'set', 'core.https_address', `127.0.0.1:${port}`);
    },
    async setInstanceConfig(name, key, value, options = {}) {
      await cli('config', 'set', name, `${key}=${value}`, ...projectFlag(options.project));
    },
    async setProfileConfig(profile, key, value, options = {}) {
      await cli('profile', 'set', profile, `${key}=${value}`, ...projectFlag(options.project));
    },
    async createNetwork(name, config = {}) {
      const net = base.freeSubnet();
      base.ownsBridge(name);
      const settings = { 'ipv4.address': `${net}.1/24`, 'ipv6.address': 'none', 'ipv4.firewall': 'false', 'ipv4.nat': 'false', ...config };
      await cli('network', 'create', name, ...Object.entries(settings).map(([k, v]) => `${k}=${v}`));
      return settings['ipv4.address'];
    },
    async setNetworkConfig(name, key, value) {
      await cli('network', 'set', name, `${key}=${value}`);
    },
    async deleteNetwork(name) {
      await cli('network', 'delete', name);
    },
    async createProject(name, config = {}) {
      // Incus turns a new project's networks feature on; LXD leaves it off. The same project on both.
      const networks = kind === 'incus' ? { 'features.networks': 'false', 'features.networks.zones': 'false' } : {};
      const settings = { 'features.images': 'false', 'features.profiles': 'false', ...networks, ...config };
      await cli('project', 'create', name, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`]));
      if (settings['features.images'] === 'true')
        await cli('image', 'import', await testImage(base.dir), '--alias', base.image, '--project', name);
      if (settings['features.profiles'] === 'true') {
        await cli('profile', 'device', 'add', 'default', 'root', 'disk', 'path=/', 'pool=default', '--project', name);
        await cli('profile', 'device', 'add', 'default', 'eth0', 'nic', 'name=eth0', `network=${base.bridge}`, '--project', name);
      }
    },
    async setProjectConfig(name, key, value) {
      await cli('project', 'set', name, `${key}=${value}`);
    },
    async deleteProject(name) {
      await cli('project', 'delete', name);
    },
    restart: () => base.restart(),
    kill: () => base.kill(),
    async freeze() {
      const pid = base.pid;
      if (pid < 0) return;
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
      base.process?.kill('SIGCONT');
    },
    leftovers: () => base.leftovers(),
    stop: () => base.stop(),
  };
  return daemon;
}

/**
 * A private daemon of `kind` for one suite (or one `describe.each` block): started in
 * `beforeAll`, stopped in `afterAll` (which fails if anything of it survives). Read `daemon()`
 * inside tests.
 */
export function useTestDaemon(kind: DaemonKind): () => TestDaemon {
  let daemon: TestDaemon | undefined;
  beforeAll(async () => {
    daemon = await startTestDaemon(kind);
  }, 180_000);
  afterAll(async () => {
    await daemon?.stop();
  }, 180_000);
  return () => {
    if (daemon === undefined) throw new Error(`the ${kind} daemon has not started (use it inside a test)`);
    return daemon;
  };
}
