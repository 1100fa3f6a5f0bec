import { ChildProcess, spawn } from 'node:child_process';
import { constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The supervisor, run by `/bin/sh` (dash on Debian): it reads `+PGID` (a helper's group started)
 * and `-PGID` (that group is gone) lines on stdin, keeping the live set. When stdin ends, the
 * daemon has exited (however it died: the kernel closes its end), so it SIGKILLs every live group
 * and then every process still holding the marker at fd 3, with that process's group: the marker
 * is what finds a helper whose `+` line the daemon never got to write (killed between the fork
 * and the write). Signals meant for the daemon (a terminal's ^C, a service manager's TERM) are
 * ignored, so it is only ever stdin's end, or SIGKILL, that stops it. A number that is not a pgid
 * above 1 is never passed to `kill` (`kill -- -1` would be everything), and neither the supervisor
 * nor the process that started it (alive when it is {@link GroupSupervisor.close}d) is ever killed.
 */
const SCRIPT = `trap '' HUP INT QUIT TERM PIPE
live=' '
while read -r line; do
  g=\${line#?}
  case $g in ''|*[!0-9]*|0|1) continue ;; esac
  case $line in
    +*) case $live in *" $g "*) ;; *) live="$live$g " ;; esac ;;
    -*) case $live in *" $g "*) live="\${live%% $g *} \${live#* $g }" ;; esac ;;
  esac
done
for g in $live; do kill -s KILL -- "-$g" 2>/dev/null; done
for f in /proc/[0-9]*/fd/3; do
  [ "$f" -ef /proc/$$/fd/3 ] || continue
  p=\${f#/proc/}
  p=\${p%%/*}
  case $p in "$$"|"$PPID") continue ;; esac
  read -r s < "/proc/$p/stat" 2>/dev/null || continue
  set -- \${s##*) }
  case $3 in ''|*[!0-9]*|0|1|$$) kill -s KILL -- "$p" 2>/dev/null ;; *) kill -s KILL -- "-$3" "$p" 2>/dev/null ;; esac
done`;

/**
 * One long-lived supervisor for every helper this process starts: a `/bin/sh` in a session of its
 * own, reading a pipe from this process, that kills every helper group still live when this
 * process ends, by any means including SIGKILL. It replaces a watchdog per helper (a shell start
 * and two forks each) with two short lines per helper on a pipe.
 *
 * Guarantees:
 * - {@link markerFd} is an open file descriptor unique to this process (a deleted temporary file);
 *   a helper given it as fd 3 is found and killed with its group even if it was never registered;
 * - after {@link register} returns, the group is recorded in the supervisor's pipe (the write is
 *   made at once), so this process dying at any later moment gets the group killed;
 * - {@link forget} is called only once the group is gone, so a reused pid is never killed;
 * - when the supervisor itself dies while this process lives, a new one is started at once and
 *   told every live group, so a kill of the supervisor alone loses nothing;
 * - it never keeps this process's event loop alive.
 */
export class GroupSupervisor {
  private child: ChildProcess | undefined;
  private marker: number | undefined;
  private readonly live = new Set<number>();

  constructor(private readonly shell = '/bin/sh') {}

  /** The marker to give each helper as fd 3; opened once, on first use. */
  markerFd(): number {
    if (this.marker === undefined) {
      // A fresh inode that only this process (and what it starts) holds: the file is gone at once.
      // Read-only and empty: a helper can do nothing with it but hold it.
      const dir = mkdtempSync(join(tmpdir(), 'rxfleet-supervisor-'));
      try {
        this.marker = openSync(join(dir, 'marker'), constants.O_RDONLY | constants.O_CREAT | constants.O_EXCL, 0o400);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    return this.marker;
  }

  /**
   * Starts the supervisor if it is not running, telling it every live group; true when it did.
   * Throws when it cannot be started: a helper must not start unsupervised.
   */
  ensure(): boolean {
    if (this.child !== undefined) return false;
    const child = spawn(this.shell, ['-c', SCRIPT, 'rxfleet-supervisor'], {
      // Its own session: a signal sent to this process's group does not reach it.
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore', this.markerFd()],
      windowsHide: true,
    });
    if (child.pid === undefined) {
      child.on('error', () => undefined);
      throw new Error(`cannot start the helper supervisor ${this.shell}`);
    }
    this.child = child;
    child.unref();
    child.stdin?.on('error', () => undefined);
    (child.stdin as { unref?: () => void } | null)?.unref?.();
    child.once('exit', () => {
      if (this.child !== child) return;
      this.child = undefined;
      // Killed on its own while this process lives: a new one takes over every live group.
      if (this.live.size > 0) {
        try {
          this.ensure();
        } catch {
          // Retried at the next helper's start, which refuses to run unsupervised.
        }
      }
    });
    if (this.live.size > 0) child.stdin?.write([...this.live].map((pgid) => `+${pgid}\n`).join(''));
    return true;
  }

  /** The supervisor's pid (undefined when none runs). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Records a helper group that has started. */
  register(pgid: number): void {
    this.live.add(pgid);
    if (!this.ensure()) this.child?.stdin?.write(`+${pgid}\n`);
  }

  /**
   * Ends the supervisor as this process's death would: every live group is killed, and so is every
   * process holding the marker. Resolves when the supervisor has exited. A later helper starts a
   * new one.
   */
  close(): Promise<void> {
    const child = this.child;
    if (child === undefined) return Promise.resolve();
    this.child = undefined;
    this.live.clear();
    return new Promise((done) => {
      child.once('exit', () => done());
      child.stdin?.end();
    });
  }

  /** Forgets a group that is gone (killed and reaped). */
  forget(pgid: number): void {
    if (!this.live.delete(pgid)) return;
    this.child?.stdin?.write(`-${pgid}\n`);
  }
}

/** The supervisor every {@link spawnSupervised} helper of this process is registered with. */
export const groupSupervisor = new GroupSupervisor();
