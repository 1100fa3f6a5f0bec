import { ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The trampoline every supervised process starts under, run by `/bin/sh` (dash on Debian, ~1 ms):
 * it leaves a watchdog in the new process group, reading the supervising pipe (fd 3), and becomes
 * the process itself with `exec`, keeping its pid, stdin, stdout, stderr, exit status and signals.
 *
 * The watchdog is started through a subshell that exits at once, so it is nobody's child (the
 * helper never sees it in `wait`) but stays in the group. When the pipe ends (the daemon exited,
 * however it died: the kernel closes its end) the watchdog kills the whole group, itself included.
 * It holds no stdio, so it never keeps the helper's output open.
 */
const TRAMPOLINE = '( { read -r _ <&3; kill -9 0; } </dev/null >/dev/null 2>&1 & ); exec 3<&-; exec "$@"';

/** Options for {@link spawnSupervised}. */
export interface SupervisedSpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** The shell that runs the trampoline. Default `/bin/sh`. */
  shell?: string;
}

/**
 * Spawns `executable args...` in a process group of its own whose life is tied to this process's:
 * when this process ends, by any means including SIGKILL, the group is killed within moments, so no
 * helper outlives the daemon that started it (Linux has a parent-death signal, but Node cannot set
 * it; a pipe's end is what every death closes).
 *
 * Guarantees:
 * - the child is the executable itself after the trampoline's `exec`: `child.pid` is its pid and
 *   the leader of its group (kill `-child.pid` to end the group), its exit code and signal are its
 *   own, stdin, stdout and stderr are pipes as with `spawn(..., { stdio: 'pipe' })`;
 * - no shell reads the command: arguments pass as `"$@"`, never expanded;
 * - an executable that cannot be run (not found on PATH, not a file, not executable) throws at
 *   once, as Node's `spawn` reports it: `spawn <executable> ENOENT` or `EACCES`, with that `code`;
 * - when the executable exits, its whole group is killed: whatever it left running, and the
 *   watchdog, so nothing outlives it and `close` follows `exit` at once;
 * - the supervising pipe is `child.stdio[3]`; nothing is ever written to it. Ending it (or this
 *   process) kills the group. It closes when the group is gone.
 *
 * The cost is one `/bin/sh` start and two forks per spawn (see `npm run bench:helper`).
 */
export function spawnSupervised(executable: string, args: readonly string[], options: SupervisedSpawnOptions = {}): ChildProcess {
  const env = options.env ?? process.env;
  checkExecutable(executable, env.PATH, options.cwd);
  const child = spawn(options.shell ?? '/bin/sh', ['-c', TRAMPOLINE, 'rxfleet-supervised', executable, ...args], {
    // detached: a new session and process group, led by the trampoline and then the executable.
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env,
    cwd: options.cwd,
    windowsHide: true,
  });
  // When it exits, whatever it left in its group goes too, and so does the watchdog.
  child.once('exit', () => killGroup(child));
  return child;
}

/** SIGKILLs the process group `child` leads (a no-op when it is gone). */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Throws as Node's `spawn` reports a command it cannot start, before the trampoline hides it. */
function checkExecutable(executable: string, path: string | undefined, cwd: string | undefined): void {
  const candidates = executable.includes('/')
    ? [cwd === undefined || executable.startsWith('/') ? executable : join(cwd, executable)]
    : (path ?? '/usr/local/bin:/usr/bin:/bin')
        .split(delimiter)
        .filter((dir) => dir !== '')
        .map((dir) => join(dir, executable));
  let code = 'ENOENT';
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) {
        code = 'EACCES';
        continue;
      }
      accessSync(candidate, constants.X_OK);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EACCES') code = 'EACCES';
    }
  }
  throw Object.assign(new Error(`spawn ${executable} ${code}`), {
    code,
    errno: code === 'ENOENT' ? -2 : -13,
    syscall: `spawn ${executable}`,
    path: executable,
  });
}
