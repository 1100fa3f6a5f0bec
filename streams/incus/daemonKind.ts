import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * The two daemons rxfleet reads: Incus (6.0 LTS, the Debian package `incus-base`) and LXD (5.0,
 * the Debian package `lxd`). Their REST APIs are the same for what rxfleet asks; their programs,
 * environment variables and a few answers are not. This module holds the programs and variables,
 * so the code that starts a private daemon is written once.
 */
export type DaemonKind = 'incus' | 'lxd';

/** Both kinds, Incus first: what `describe.each` runs the daemon specs over. */
export const DAEMON_KINDS: readonly DaemonKind[] = ['incus', 'lxd'];

/** How to run one kind of daemon and its client. */
export interface DaemonProgram {
  readonly kind: DaemonKind;
  /** How a person names it: `Incus`, `LXD`. */
  readonly title: string;
  /** The daemon's executable (Incus's is not on PATH). */
  readonly daemon: string;
  /** The command-line client. */
  readonly client: string;
  /** The program and leading arguments of the admin commands (`waitready`, `init`, `shutdown`). */
  readonly admin: readonly [string, ...string[]];
  /** The variable naming the daemon's directory (its socket is `unix.socket` in it). */
  readonly dirVariable: 'INCUS_DIR' | 'LXD_DIR';
  /** The variable naming the client's configuration directory. */
  readonly confVariable: 'INCUS_CONF' | 'LXD_CONF';
  /** How to install it and what a private daemon needs beside it, on Debian (Incus's from bookworm-backports on Debian 12). */
  readonly packages: string;
}

const PROGRAMS: Record<DaemonKind, DaemonProgram> = {
  incus: {
    kind: 'incus',
    title: 'Incus',
    daemon: '/usr/libexec/incus/incusd',
    client: 'incus',
    admin: ['incus', 'admin'],
    dirVariable: 'INCUS_DIR',
    confVariable: 'INCUS_CONF',
    packages: 'apt-get install iptables dnsmasq-base busybox-static, and incus-base incus-client (on Debian 12 from bookworm-backports)',
  },
  lxd: {
    kind: 'lxd',
    title: 'LXD',
    daemon: 'lxd',
    client: 'lxc',
    admin: ['lxd'],
    dirVariable: 'LXD_DIR',
    confVariable: 'LXD_CONF',
    packages: 'apt-get install lxd iptables dnsmasq-base busybox-static',
  },
};

/** The programs of `kind`. */
export function daemonProgram(kind: DaemonKind): DaemonProgram {
  return PROGRAMS[kind];
}

function onPath(file: string): boolean {
  return file.startsWith('/') ? existsSync(file) : spawnSync('sh', ['-c', `command -v ${file}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Why a private daemon of `kind` cannot be started here (not root, a missing program), or
 * `undefined` when it can. The sentence names the Debian packages to install.
 */
export function daemonUnavailable(kind: DaemonKind): string | undefined {
  const program = PROGRAMS[kind];
  if (process.getuid?.() !== 0) return `a private ${program.title} daemon needs root`;
  for (const binary of [program.daemon, program.client, 'dnsmasq', 'iptables']) {
    if (!onPath(binary)) {
      return `a private ${program.title} daemon needs ${binary} (${program.packages})`;
    }
  }
  return undefined;
}

/**
 * The kind to use when the user did not choose: Incus when it is installed, else LXD when that is,
 * else Incus (whose missing programs {@link daemonUnavailable} then names).
 */
export function preferredDaemonKind(): DaemonKind {
  const installed = (kind: DaemonKind): boolean => [PROGRAMS[kind].daemon, PROGRAMS[kind].client].every(onPath);
  return installed('incus') || !installed('lxd') ? 'incus' : 'lxd';
}
