import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { cacheKeyOf, compileCacheDir, launchOf } from '../../bin/compileCache';
import { CACHED_COMMANDS, COMMAND_NAMES } from '../../bin/commandNames';
import { RXFLEET_BIN } from '../helpers/rxfleetProcess';

// The launchers' code cache (bin/compileCache.ts), run in child processes as the CLI runs it: a
// cache is written when a process exits, and used by the next. The runner below calls the built
// runBundle (`npm test` builds first) on a small bundle and prints what became of the cache.
const execFileAsync = promisify(execFile);
const root = resolve(__dirname, '../..');
let scratch: string;

beforeAll(() => {
  scratch = mkdtempSync(join(tmpdir(), 'rxfleet-compile-cache-'));
  writeFileSync(
    join(scratch, 'runner.cjs'),
    `const { runBundle } = require(${JSON.stringify(join(root, 'dist/bin/compileCache.js'))});
const { readFileSync } = require('node:fs');
const file = process.argv[2];
const use = runBundle({ source: readFileSync(file, 'latin1'), filename: file, dirname: __dirname, require, key: 'status', cacheDir: process.env.CACHE_DIR, quick: process.env.QUICK === '1' });
console.log('cache ' + use);
`,
  );
});

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A bundle as scripts/package/bundle.ts heads it; its body prints `says` and exits with `exitCode`. */
function bundleText(says: string): string {
  const body = `const words = ${JSON.stringify(says)};
function shout(text) { return text.toUpperCase(); }
function twice(text) { return [text, text].join(' '); }
console.log(twice(shout(words)), typeof require, __filename.endsWith('.cjs'));
process.exitCode = Number(process.env.EXIT_CODE ?? 0);
`;
  return `// rxfleet-bundle ${createHash('sha256').update(body).digest('hex').slice(0, 16)}\n${body}`;
}

async function run(bundle: string, cacheDir: string, exitCode = 0): Promise<{ use: string; said: string; code: number }> {
  try {
    const { stdout } = await execFileAsync(process.execPath, [join(scratch, 'runner.cjs'), bundle], {
      env: { ...process.env, CACHE_DIR: cacheDir, EXIT_CODE: String(exitCode) },
    });
    return { said: stdout.split('\n')[0], use: /cache (\w+)/.exec(stdout)?.[1] ?? '', code: 0 };
  } catch (error) {
    const e = error as { code: number; stdout: string };
    return { said: e.stdout.split('\n')[0], use: /cache (\w+)/.exec(e.stdout)?.[1] ?? '', code: e.code };
  }
}

let n = 0;
/** A fresh bundle file and cache directory. */
function place(says = 'hello'): { bundle: string; cache: string } {
  const dir = join(scratch, `case-${++n}`);
  mkdirSync(dir);
  const bundle = join(dir, 'cli.cjs');
  writeFileSync(bundle, bundleText(says));
  return { bundle, cache: join(dir, 'cache') };
}

const cacheFiles = (cache: string): string[] => readdirSync(cache).filter((name) => name.endsWith('.v8'));
const only = (cache: string): string => {
  const files = cacheFiles(cache);
  expect(files).toHaveLength(1);
  return join(cache, files[0]);
};
const header = (file: string): string => readFileSync(file, 'latin1').split('\n')[0];

describe('runBundle: a code cache of the last run', () => {
  it("writes one at the first run's exit, private to the user, and the next run uses it without writing again", async () => {
    const { bundle, cache } = place();
    expect(await run(bundle, cache)).toEqual({ use: 'none', said: 'HELLO HELLO function true', code: 0 });
    const file = only(cache);
    const hash = /^\/\/ rxfleet-bundle ([0-9a-f]{16})/.exec(readFileSync(bundle, 'latin1'))![1];
    expect(header(file)).toBe(`rxfleet-compile-cache ${hash} ${process.version} ${process.arch} ok`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(cache).mode & 0o777).toBe(0o700);
    const written = statSync(file).mtimeMs;
    expect(await run(bundle, cache)).toEqual({ use: 'used', said: 'HELLO HELLO function true', code: 0 });
    expect(statSync(file).mtimeMs).toBe(written);
    expect(cacheFiles(cache)).toHaveLength(1);
  });

  it('never uses a cache for another text of the same length at the same path (V8 checks only the length), and replaces it', async () => {
    const { bundle, cache } = place('hello');
    await run(bundle, cache);
    const before = header(only(cache));
    writeFileSync(bundle, bundleText('HELLO'));
    expect(readFileSync(bundle).length).toBe(bundleText('hello').length);
    expect(await run(bundle, cache)).toEqual({ use: 'none', said: 'HELLO HELLO function true', code: 0 });
    expect(header(only(cache))).not.toBe(before);
    expect((await run(bundle, cache)).use).toBe('used');
  });

  it('runs the bundle when V8 refuses the data, and writes a good cache in its place', async () => {
    const { bundle, cache } = place();
    await run(bundle, cache);
    const file = only(cache);
    writeFileSync(file, `${header(file)}\n${'x'.repeat(4096)}`, { mode: 0o600 });
    expect(await run(bundle, cache)).toEqual({ use: 'refused', said: 'HELLO HELLO function true', code: 0 });
    expect((await run(bundle, cache)).use).toBe('used');
  });

  it("replaces a failed run's cache with a successful run's, and keeps a successful run's through a failed one", async () => {
    const { bundle, cache } = place();
    expect((await run(bundle, cache, 3)).code).toBe(3);
    expect(header(only(cache))).toMatch(/ failed$/);
    expect((await run(bundle, cache, 0)).use).toBe('used');
    expect(header(only(cache))).toMatch(/ ok$/);
    const written = statSync(only(cache)).mtimeMs;
    expect((await run(bundle, cache, 3)).use).toBe('used');
    expect(statSync(only(cache)).mtimeMs).toBe(written);
    expect(header(only(cache))).toMatch(/ ok$/);
  });

  it('uses no cache that others could have written: a file others may write, a symbolic link, a directory others may write', async () => {
    const { bundle, cache } = place();
    await run(bundle, cache);
    const file = only(cache);
    chmodSync(file, 0o666);
    expect((await run(bundle, cache)).use).toBe('none');
    // ...and puts its own in its place.
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect((await run(bundle, cache)).use).toBe('used');

    const elsewhere = join(scratch, `elsewhere-${n}.v8`);
    writeFileSync(elsewhere, readFileSync(file), { mode: 0o600 });
    rmSync(file);
    symlinkSync(elsewhere, file);
    expect((await run(bundle, cache)).use).toBe('none');

    const open = place();
    mkdirSync(open.cache, { mode: 0o777 });
    chmodSync(open.cache, 0o777);
    expect(await run(open.bundle, open.cache)).toEqual({ use: 'none', said: 'HELLO HELLO function true', code: 0 });
    expect(cacheFiles(open.cache)).toEqual([]);
  });

  it("a quick run: V8's optimizing compiler off while it runs, and its cache taken by the next quick run (made under the same flags)", async () => {
    const dir = join(scratch, `case-${++n}`);
    mkdirSync(dir);
    const bundle = join(dir, 'hot.cjs');
    // A function hot enough for TurboFan within a few milliseconds; --trace-opt says when it compiles one.
    const body =
      'function add(a, b) { return a + b * 2; }\nlet s = 0; for (let i = 0; i < 3e6; i++) s = add(s, i) % 1000003;\nconsole.log(s);\n';
    writeFileSync(bundle, `// rxfleet-bundle ${createHash('sha256').update(body).digest('hex').slice(0, 16)}\n${body}`);
    const traced = async (quick: boolean, cache: string): Promise<string> =>
      (
        await execFileAsync(process.execPath, ['--trace-opt', join(scratch, 'runner.cjs'), bundle], {
          env: { ...process.env, CACHE_DIR: cache, QUICK: quick ? '1' : '0' },
        })
      ).stdout;
    expect(await traced(false, join(dir, 'slow'))).toMatch(/TURBOFAN/);
    const cache = join(dir, 'quick');
    const first = await traced(true, cache);
    expect(first).not.toMatch(/TURBOFAN/);
    expect(first).toMatch(/cache none/);
    const written = statSync(only(cache)).mtimeMs;
    const second = await traced(true, cache);
    expect(second).toMatch(/cache used/);
    expect(second).not.toMatch(/TURBOFAN/);
    expect(statSync(only(cache)).mtimeMs).toBe(written);
  });

  it('runs as before, writing nothing, where the directory cannot be made', async () => {
    const { bundle } = place();
    const blocked = join(scratch, `a-file-${n}`);
    writeFileSync(blocked, '');
    const outcome = await run(bundle, join(blocked, 'cache'));
    expect(outcome).toEqual({ use: 'none', said: 'HELLO HELLO function true', code: 0 });
  });
});

describe('how the launchers run a command line: which bundle, and whether quick', () => {
  it.each([
    [['status', '--nats', 'nats://x:4222'], 'read', true],
    [['--debug', 'status'], 'read', true],
    [['status', '--watch'], 'read', false],
    [['history', 'node-1.example.net'], 'read', false],
    [['validate', '--config', 'a.yaml'], 'cli', false],
    [['--version'], 'cli', false],
    [['status', '--help'], 'cli', false],
    [['provision', '--config', 'p.yaml'], 'cli', false],
    [['demo'], 'cli', false],
  ])('%j: %s bundle, quick %s', (args, bundle, quick) => {
    expect(launchOf(args)).toEqual({ key: cacheKeyOf(args, COMMAND_NAMES, CACHED_COMMANDS), bundle, quick });
  });
});

describe('which cache a command line uses', () => {
  it.each([
    [['status', '--nats', 'nats://x:4222'], 'status'],
    [['history', 'node-1.example.net'], 'history'],
    [['validate', '--config', 'a.yaml'], 'validate'],
    [['--debug', 'validate'], 'validate'],
    [['status', '--help'], 'status-help'],
    [['provision', '-h'], 'provision-help'],
    [['help', 'enrich'], 'enrich-help'],
    [['--help'], 'rxfleet-help'],
    [['--version'], 'rxfleet'],
    [['-V'], 'rxfleet'],
  ])('%j: %s', (args, key) => {
    expect(cacheKeyOf(args, COMMAND_NAMES, CACHED_COMMANDS)).toBe(key);
  });

  it.each([[['provision', '--config', 'p.yaml']], [['run']], [['enrich']], [['demo']], [['--config', 'p.yaml']], [[]]])(
    '%j, a daemon or a long run: none',
    (args) => {
      expect(cacheKeyOf(args, COMMAND_NAMES, CACHED_COMMANDS)).toBeUndefined();
    },
  );

  it('where: RXFLEET_COMPILE_CACHE, else $XDG_CACHE_HOME/rxfleet, else ~/.cache/rxfleet; none when disabled or homeless', () => {
    expect(compileCacheDir({ RXFLEET_COMPILE_CACHE: '/c', XDG_CACHE_HOME: '/x', HOME: '/h' })).toBe('/c');
    expect(compileCacheDir({ XDG_CACHE_HOME: '/x', HOME: '/h' })).toBe('/x/rxfleet');
    expect(compileCacheDir({ HOME: '/h' })).toBe('/h/.cache/rxfleet');
    expect(compileCacheDir({})).toBeUndefined();
    expect(compileCacheDir({ HOME: '/h', RXFLEET_DISABLE_COMPILE_CACHE: '1' })).toBeUndefined();
    expect(compileCacheDir({ HOME: '/h', RXFLEET_DISABLE_COMPILE_CACHE: '0' })).toBe('/h/.cache/rxfleet');
  });
});

describe('the npm install runs its bundle through the cache', () => {
  const cli = async (args: string[], cache: string) =>
    execFileAsync(process.execPath, [RXFLEET_BIN, ...args], { env: { ...process.env, RXFLEET_COMPILE_CACHE: cache } });

  it('names every command the program has, and caches only commands of it', async () => {
    const { stdout } = await execFileAsync(process.execPath, [RXFLEET_BIN, '--help'], { env: { ...process.env, COLUMNS: '200' } });
    const listed = stdout
      .slice(stdout.indexOf('Commands:'))
      .split('\n')
      .map((line) => /^ {2}([a-z][a-z|-]*)/.exec(line)?.[1])
      .filter((name): name is string => name !== undefined && name !== 'help')
      .flatMap((name) => name.split('|'));
    expect([...listed].sort()).toEqual([...COMMAND_NAMES].sort());
    for (const command of CACHED_COMMANDS) expect(COMMAND_NAMES).toContain(command);
  });

  it('keeps a cache per operator command, none for a daemon, and uses it at the next start', async () => {
    const cache = join(scratch, 'cli-cache');
    expect((await cli(['--version'], cache)).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    await cli(['validate', '--help'], cache);
    await expect(cli(['provision', '--config', join(scratch, 'none.yaml')], cache)).rejects.toThrow();
    const files = readdirSync(cache).sort();
    expect(files.map((f) => f.replace(/^[0-9a-f]{8}-/, ''))).toEqual(['rxfleet.v8', 'validate-help.v8']);
    const written = files.map((f) => statSync(join(cache, f)).mtimeMs);
    expect((await cli(['--version'], cache)).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(files.map((f) => statSync(join(cache, f)).mtimeMs)).toEqual(written);
  });

  it("runs status and history from the reads' own bundle, which answers as the whole CLI does", async () => {
    const cache = join(scratch, 'read-cache');
    await expect(cli(['status', '--nats', 'nats://127.0.0.1:1'], cache)).rejects.toThrow(/connection refused/);
    await cli(['--version'], cache);
    const prefixOf = (name: string): string =>
      readdirSync(cache)
        .find((f) => f.endsWith(`-${name}.v8`))!
        .slice(0, 8);
    // One cache file per bundle path: status's is another bundle's than --version's.
    expect(prefixOf('status')).not.toBe(prefixOf('rxfleet'));

    const answer = async (bundle: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> =>
      execFileAsync(process.execPath, [join(root, 'dist/bin', bundle), ...args]).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
      );
    for (const args of [
      ['status', '--bogus'],
      ['history'],
      ['status', '--every', 'soon'],
      ['--debug', 'history', 'node-1.example.net', '--nats', 'nats://127.0.0.1:1'],
      ['status', '--json', '--nats', 'nats://user:secret@127.0.0.1:1'],
    ]) {
      const read = await answer('rxfleet-read.bundle.cjs', args);
      expect(read.code).not.toBe(0);
      expect(read).toEqual(await answer('rxfleet.bundle.cjs', args));
    }
  });

  it.each(['rxfleet.bundle.cjs', 'rxfleet-read.bundle.cjs'])('%s is ASCII only, headed by the hash of the rest of its text', (bundle) => {
    const text = readFileSync(join(root, 'dist/bin', bundle), 'latin1');
    const [, hash, rest] = /^\/\/ rxfleet-bundle ([0-9a-f]{16})\n([\s\S]*)$/.exec(text) ?? [];
    expect(createHash('sha256').update(rest).digest('hex').slice(0, 16)).toBe(hash);
    expect(/[^\t\n\r\x20-\x7e]/.test(text)).toBe(false);
  });
});
