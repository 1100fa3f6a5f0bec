/** Every command's name and alias, as bin/program.ts registers them (a spec checks the two agree). */
export const COMMAND_NAMES: readonly string[] = [
  'demo',
  'enrich',
  'events',
  'history',
  'provision',
  'provision-incus',
  'run',
  'simulate',
  'status',
  'validate',
];

/**
 * The commands an operator runs and waits for, each of which keeps a code cache of its last run
 * (bin/compileCache.ts); the others are daemons, or run for minutes.
 */
export const CACHED_COMMANDS: readonly string[] = ['history', 'status', 'validate'];

/**
 * The commands bin/readProgram.ts carries, which the launchers run from a bundle of their own, a
 * fifth of the whole CLI's (their --help comes from the whole CLI's).
 */
export const READ_COMMANDS: readonly string[] = ['history', 'status'];

/**
 * The cached commands that read the whole fleet (every node's last record) and exit: the only ones
 * whose functions get hot enough for V8 to start optimizing them, which Node then waits for at
 * exit. bin/compileCache.ts's `launchOf` runs them without the optimizing compiler (not with `--watch`).
 */
export const FLEET_READING_COMMANDS: readonly string[] = ['status'];
