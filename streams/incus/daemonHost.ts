import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * What a private Incus or LXD daemon (its own `INCUS_DIR` or `LXD_DIR`) leaves on the machine,
 * found without asking it: the processes that name its directory and their descendants, its
 * mounts, its bridges. Shared by `rxfleet demo --incus` and the test harness, so both clean up the
 * same way. Every function is
 * synchronous, so it can run in an exit handler (streams/exitCleanup.ts).
 */

/** A 10.x.y prefix (of a /24) that no route on this machine covers yet, and not in `taken` (which it joins). */
export function freeSubnet(taken: Set<string>): string {
  const routes = spawnSync('ip', ['-4', 'route', 'show'], { encoding: 'utf8' }).stdout ?? '';
  for (let i = 0; i < 1000; i++) {
    const prefix = `10.${100 + Math.floor(Math.random() * 100)}.${Math.floor(Math.random() * 256)}`;
    if (!routes.includes(`${prefix}.`) && !taken.has(prefix)) {
      taken.add(prefix);
      return prefix;
    }
  }
  throw new Error('no free 10.x.y.0/24 for a private bridge');
}

/** Whether a network link of that name exists. */
export function linkExists(name: string): boolean {
  return spawnSync('ip', ['link', 'show', 'dev', name], { stdio: 'ignore' }).status === 0;
}

/**
 * Processes (not zombies, not this one) whose command line mentions `dir`, plus `extraPids`, and
 * all their descendants: an Incus or LXD daemon, its dnsmasq, its instances' monitors and what runs in them.
 */
export function processesOf(dir: string, extraPids: number[] = []): Array<{ pid: number; cmd: string }> {
  const table = new Map<number, { ppid: number; cmd: string; zombie: boolean }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const after = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      table.set(Number(entry), { ppid: Number(after[1]), cmd, zombie: after[0] === 'Z' });
    } catch {
      // it exited while we looked
    }
  }
  const mine = new Set<number>([...table].filter(([, p]) => p.cmd.includes(dir)).map(([pid]) => pid));
  for (const pid of extraPids) if (table.has(pid)) mine.add(pid);
  for (let grown = true; grown;) {
    grown = false;
    for (const [pid, p] of table) {
      if (!mine.has(pid) && mine.has(p.ppid)) {
        mine.add(pid);
        grown = true;
      }
    }
  }
  return [...mine]
    .filter((pid) => pid !== process.pid && table.get(pid)?.zombie === false)
    .map((pid) => ({ pid, cmd: table.get(pid)?.cmd ?? '' }));
}

/** Mount points at or under `dir`, deepest first (the order to unmount them in). */
export function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined && (point === dir || point.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
}

/**
 * Removes what is left of a private Incus or LXD daemon at once, without asking it: kills every process of
 * `dir` (SIGKILL), deletes `bridges`, unmounts what is mounted under `dir`. The directory itself
 * is the caller's to remove (after the processes are gone). Synchronous, for exit handlers.
 */
export function killPrivateDaemon(dir: string, bridges: Iterable<string>, extraPids: number[] = []): void {
  for (const p of processesOf(dir, extraPids)) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const bridge of bridges) if (linkExists(bridge)) spawnSync('ip', ['link', 'delete', 'dev', bridge], { stdio: 'ignore' });
  for (const point of mountsUnder(dir)) spawnSync('umount', ['-l', point], { stdio: 'ignore' });
}

/** What of a private Incus or LXD daemon still exists: processes, bridges, mounts, iptables rules, its directory. */
export function privateDaemonLeftovers(dir: string, bridges: Iterable<string>): string[] {
  const found: string[] = [];
  for (const p of processesOf(dir)) found.push(`process ${p.pid}: ${p.cmd}`);
  const names = [...bridges];
  for (const bridge of names) if (linkExists(bridge)) found.push(`bridge ${bridge}`);
  for (const point of mountsUnder(dir)) found.push(`mount ${point}`);
  const rules = spawnSync('iptables-save', [], { encoding: 'utf8' }).stdout ?? '';
  for (const bridge of names) if (rules.includes(bridge)) found.push(`iptables rules for ${bridge}`);
  if (existsSync(dir)) found.push(`directory ${dir}`);
  return found;
}

/**
 * The script that builds the offline busybox image (`scripts/lxd/build-image.sh`), found from
 * this module whether it runs from the sources or the build: the nearest ancestor holding it.
 */
export function imageBuildScript(): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, 'scripts', 'lxd', 'build-image.sh');
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`scripts/lxd/build-image.sh not found above ${__dirname}`);
  }
}

/**
 * The preseed of a private Incus or LXD daemon (`incus admin init --preseed`, `lxd init --preseed`, the same shape): a `dir` storage pool, a managed bridge on `prefix`.0/24
 * with no firewall or NAT (so no iptables rule is ever written), a default profile with root and eth0.
 */
export function privateDaemonPreseed(bridge: string, prefix: string): string {
  return [
    'storage_pools:',
    '- name: default',
    '  driver: dir',
    'networks:',
    `- name: ${bridge}`,
    '  type: bridge',
    '  config:',
    `    ipv4.address: ${prefix}.1/24`,
    '    ipv6.address: none',
    '    ipv4.firewall: "false"',
    '    ipv4.nat: "false"',
    'profiles:',
    '- name: default',
    '  devices:',
    '    root: {type: disk, path: /, pool: default}',
    `    eth0: {type: nic, name: eth0, network: ${bridge}}`,
    '',
  ].join('\n');
}
