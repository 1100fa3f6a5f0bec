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
