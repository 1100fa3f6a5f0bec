import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { HelperCommandError, splitHelperCommand } from '../../lib/provision/helper/helperCommand';

/** Where to look and as whom; the defaults are this process's. */
export interface HelperExecutableOptions {
  /** The `PATH` a bare command name is looked up in. Default `process.env.PATH`. */
  path?: string;
  /** What a relative path is relative to. Default the working directory. */
  cwd?: string;
}

/**
 * Why the helper's executable cannot be run by this process's user, or `undefined` when it can:
 * it does not exist, is not a file, or is not executable for this user (the daemon runs helpers
 * as the user it runs as). A name without a `/` is looked up in `PATH`, as the helper runner's
 * `spawn` does. Only the executable is named, never its arguments, which can carry a secret.
 * A command that does not split is left to the configuration's own check.
 */
export function helperExecutableProblem(command: string, options: HelperExecutableOptions = {}): string | undefined {
  let executable: string;
  try {
    [executable] = splitHelperCommand(command);
  } catch (error) {
    if (error instanceof HelperCommandError) return undefined;
    throw error;
  }
  const cwd = options.cwd ?? process.cwd();
  if (!executable.includes('/')) {
    const dirs = (options.path ?? process.env.PATH ?? '').split(delimiter).filter((d) => d !== '');
    for (const dir of dirs) {
      const candidate = resolve(cwd, dir, executable);
      if (usable(candidate) === undefined) return undefined;
    }
    return `${executable} is not an executable file in any PATH directory of this user`;
  }
  const path = isAbsolute(executable) ? executable : join(cwd, executable);
  const problem = usable(path);
  return problem === undefined ? undefined : `${executable} ${problem}`;
}

function usable(path: string): string | undefined {
  let isFile: boolean;
  try {
    isFile = statSync(path).isFile();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? 'does not exist' : `cannot be read (${code ?? (error as Error).message})`;
  }
  if (!isFile) return 'is not a file';
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return `is not executable by this user (uid ${process.getuid?.() ?? '?'})`;
  }
  return undefined;
}
