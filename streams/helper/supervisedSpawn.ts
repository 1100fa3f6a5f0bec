import { ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { GroupSupervisor, groupSupervisor } from './groupSupervisor';

/** Options for {@link spawnSupervised}. */
export interface SupervisedSpawnOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Who kills the helper's group when this process dies; default {@link groupSupervisor}. */
  supervisor?: GroupSupervisor;
}

/**
 * Spawns `executable args...` in a process group of its own whose life is tied to this process's:
 * when this process ends, by any means including SIGKILL, the group is killed within moments, so no
 * helper outlives the daemon that started it. One long-lived supervisor per daemon
 * ({@link GroupSupervisor}) does the killing: the helper is spawned directly, with no shell or
 * other program in front of it (Linux's parent-death signal would need one, `setpriv`, and covers
 * only the helper, not what it starts).
 *
 * Guarantees:
 * - the child is the executable itself: `child.pid` is its pid and the leader of its group (kill
 *   `-child.pid` to end the group), its exit code and signal are its own, stdin, stdout and stderr
 *   are pipes as with `spawn(..., { stdio: 'pipe' })`, and no shell reads the arguments;
 * - the group is registered with the supervisor before this function returns, and the helper holds
 *   the supervisor's marker at fd 3 from its first instruction, so this process dying even between
 *   the fork and the registration still gets the helper (and its group) killed;
 * - an executable that cannot be run (not found on PATH, not a file, not executable) throws at
 *   once, as Node's `spawn` reports it: `spawn <executable> ENOENT` or `EACCES`, with that `code`;
 *   so does a supervisor that cannot be started: no helper runs unsupervised;
 * - when the executable exits, its whole group is killed (whatever it left running), and only then
 *   forgotten by the supervisor.
 *
 * The cost over a bare spawn is the three pipes any helper needs, the marker descriptor and two
 * short lines on a pipe (see `npm run bench:helper`).
 */
export function spawnSupervised(executable: string, args: readonly string[], options: SupervisedSpawnOptions = {}): ChildProcess {
  const env = options.env ?? process.env;
  checkExecutable(executable, env.PATH, options.cwd);
  const supervisor = options.supervisor ?? groupSupervisor;
  supervisor.ensure();
  const child = spawn(executable, args, {
    // detached: a new session and process group, led by the executable.
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe', supervisor.markerFd()],
    env,
    cwd: options.cwd,
    windowsHide: true,
  });
  const pid = child.pid;
  if (pid !== undefined) {
    supervisor.register(pid);
    // When it exits, whatever it left in its group goes too; then the group is forgotten.
    child.once('exit', () => {
      killGroup(child);
      supervisor.forget(pid);
    });
  }
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

/** Throws as Node's `spawn` reports a command it cannot start, before any process starts. */
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
