// The CLI's start is mostly V8 compiling it: the bundle's modules and then, as they run, every
// function a command calls. A code cache made after a command has run holds both (one made at
// build time, as the single executable's own, holds only the top level), so the same command's
// next start skips them. Node 20 has no compile cache of its own (22's `module.enableCompileCache`).
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, statSync, Stats, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as V8 from 'node:v8';
import { Script } from 'node:vm';
import { CACHED_COMMANDS, COMMAND_NAMES, FLEET_READING_COMMANDS, READ_COMMANDS } from './commandNames';

/** The line scripts/package/bundle.ts heads every bundle with: a hash of the rest of its text. */
export const BUNDLE_HEADER = /^\/\/ rxfleet-bundle ([0-9a-f]{16})\n/;

/**
 * Where code caches go: `RXFLEET_COMPILE_CACHE` if set, else `$XDG_CACHE_HOME/rxfleet`, else
 * `$HOME/.cache/rxfleet`; none with `RXFLEET_DISABLE_COMPILE_CACHE` set (not `0`) or with no home.
 */
export function compileCacheDir(env: NodeJS.ProcessEnv): string | undefined {
  if (
    env.RXFLEET_DISABLE_COMPILE_CACHE !== undefined &&
    env.RXFLEET_DISABLE_COMPILE_CACHE !== '' &&
    env.RXFLEET_DISABLE_COMPILE_CACHE !== '0'
  )
    return undefined;
  if (env.RXFLEET_COMPILE_CACHE) return env.RXFLEET_COMPILE_CACHE;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'rxfleet');
  return env.HOME ? join(env.HOME, '.cache', 'rxfleet') : undefined;
}

/**
 * Which cache a command line uses, if any: `<command>-help` (or `rxfleet-help`) when it asks for
 * help, whose run compiles little of what the command's own does; the command itself when it is
 * one of `cached` (the commands an operator runs and waits for); `rxfleet` for `--version`; none
 * for the rest, the daemons, whose start nobody waits on and which run for hours. A cache only
 * saves time, so a wrong guess costs compiling, never behaviour.
 */
export function cacheKeyOf(args: readonly string[], commands: readonly string[], cached: readonly string[]): string | undefined {
  const command = args.find((arg) => commands.includes(arg));
  if (args[0] === 'help' || args.some((arg) => arg === '--help' || arg === '-h')) return `${command ?? 'rxfleet'}-help`;
  if (command !== undefined) return cached.includes(command) ? command : undefined;
  return args.length === 1 && (args[0] === '--version' || args[0] === '-V') ? 'rxfleet' : undefined;
}

/** How a launcher runs a command line: its cache (`cacheKeyOf`), which bundle, and whether quick. */
export interface Launch {
  key: string | undefined;
  /** The reads' own bundle (bin/readProgram.ts) for READ_COMMANDS, else the whole CLI's. */
  bundle: 'cli' | 'read';
  /**
   * Without V8's optimizing compiler: FLEET_READING_COMMANDS, not watching. Their hottest functions
   * start optimizing only to be waited for at exit, where Node waits for every optimization still
   * compiling on another thread; the other commands would pay for the flag's module (`node:v8`)
   * and gain nothing.
   */
  quick: boolean;
}

/** What both launchers (bin/rxfleet.ts, scripts/package/seaMain.ts) do with a command line. */
export function launchOf(args: readonly string[]): Launch {
  const key = cacheKeyOf(args, COMMAND_NAMES, CACHED_COMMANDS);
  return {
    key,
    bundle: key !== undefined && READ_COMMANDS.includes(key) ? 'read' : 'cli',
    quick: key !== undefined && FLEET_READING_COMMANDS.includes(key) && !args.includes('--watch'),
  };
}

/** Owned by this user and writable by nobody else: a cache is code, run as this user. */
function trusted(stats: Stats): boolean {
  return stats.uid === process.geteuid?.() && (stats.mode & 0o022) === 0;
}

/** FNV-1a: a file name for each bundle's path, without loading the crypto module for it. */
function pathHash(path: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) hash = Math.imul(hash ^ path.charCodeAt(i), 0x01000193) >>> 0;
  return hash.toString(16).padStart(8, '0');
}

/**
 * What heads a cache file: the bundle's hash, the Node version and architecture that made it, and
 * whether the run that made it succeeded. Ends with a newline; V8's data follows.
 */
function cacheHeader(bundleHash: string, success: boolean): string {
  return `rxfleet-compile-cache ${bundleHash} ${process.version} ${process.arch} ${success ? 'ok' : 'failed'}\n`;
}

/** The cache and whether the run that made it succeeded; undefined where there is none this user may trust, for this bundle and Node. */
function readCache(dir: string, file: string, bundleHash: string): { data: Buffer; fromSuccess: boolean } | undefined {
  try {
    if (!trusted(statSync(dir))) return undefined;
    const fd = openSync(join(dir, file), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile() || !trusted(stats)) return undefined;
      const bytes = readFileSync(fd);
      for (const success of [true, false]) {
        const header = cacheHeader(bundleHash, success);
        if (bytes.length > header.length && bytes.toString('latin1', 0, header.length) === header)
          return { data: bytes.subarray(header.length), fromSuccess: success };
      }
      return undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** Writes the cache whole or not at all, over the last one for the same bundle path and command. */
function writeCache(dir: string, file: string, bundleHash: string, data: Buffer, success: boolean): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!trusted(statSync(dir))) return;
    const partial = join(dir, `${file}.${process.pid}.partial`);
    writeFileSync(partial, Buffer.concat([Buffer.from(cacheHeader(bundleHash, success), 'latin1'), data]), { mode: 0o600, flag: 'wx' });
    renameSync(partial, join(dir, file));
  } catch {
    // A cache that cannot be written is compiled again next time, nothing more.
  }
}

/** What became of the cache: none kept for this command line, none there yet, V8 refused it, used. */
export type CacheUse = 'off' | 'none' | 'refused' | 'used';

/** What `runBundle` runs and where the cache of it is kept. */
export interface Bundle {
  /** The bundle's text, headed by its hash (`BUNDLE_HEADER`). */
  source: string;
  /** Its path, as stack traces and `__filename` give it. */
  filename: string;
  /** Its `__dirname`. */
  dirname: string;
  /** The `require` its modules get: Node's built-ins, and anything it leaves outside it. */
  require: NodeJS.Require;
  /** The cache for this command line (`cacheKeyOf`); undefined runs it without one. */
  key: string | undefined;
  /** `compileCacheDir`; undefined runs it without a cache. */
  cacheDir: string | undefined;
  /** `Launch.quick`: run without V8's optimizing compiler. */
  quick?: boolean;
}

/**
 * Runs a CommonJS bundle as `require` would, with V8's code cache of an earlier run of the same
 * command. Guarantees: a cache is used only for the exact text whose hash heads it (V8 itself checks
 * only the length), only from a file and directory owned by this user and writable by no one else,
 * and only by the Node version and architecture that made it (V8 refuses other flags); it changes
 * how fast the bundle starts, never what it does; reading or writing it never fails the command.
 * Each bundle path keeps one cache per command, which the next build or Node version there replaces.
 * A cache is written when the process exits if there was none, V8 refused it, or it came from a
 * run that failed and this one succeeded: a failed run (a usage error, say) compiles less.
 * Returns what became of the cache, as the bundle started.
 */
export function runBundle(bundle: Bundle): CacheUse {
  const hash = BUNDLE_HEADER.exec(bundle.source)?.[1];
  // One file per place the bundle is run from and command: a new build or Node there replaces it,
  // and an npm install and a binary (or two versions) on one host keep theirs apart.
  const place =
    hash === undefined || bundle.key === undefined || bundle.cacheDir === undefined
      ? undefined
      : { dir: bundle.cacheDir, file: `${pathHash(bundle.filename)}-${bundle.key}.v8`, hash };
  const cached = place === undefined ? undefined : readCache(place.dir, place.file, place.hash);
  const script = new Script(`(function (exports, require, module, __filename, __dirname) { ${bundle.source}\n});`, {
    filename: bundle.filename,
    cachedData: cached?.data,
  });
  // Off only once compiled: V8 takes a cache only under the flags that made it, so it is back on
  // before one is made. Node's own code cache was checked at its start, under the default flags.
  const v8 = bundle.quick === true ? (bundle.require('node:v8') as typeof V8) : undefined;
  v8?.setFlagsFromString('--no-opt');
  if (place !== undefined)
    process.once('exit', (code) => {
      const success = code === 0;
      if (cached !== undefined && !script.cachedDataRejected && (cached.fromSuccess || !success)) return;
      v8?.setFlagsFromString('--opt');
      writeCache(place.dir, place.file, place.hash, script.createCachedData(), success);
    });
  const module = { exports: {} };
  (script.runInThisContext() as (...args: unknown[]) => void).call(
    module.exports,
    module.exports,
    bundle.require,
    module,
    bundle.filename,
    bundle.dirname,
  );
  return place === undefined ? 'off' : cached === undefined ? 'none' : script.cachedDataRejected === true ? 'refused' : 'used';
}
