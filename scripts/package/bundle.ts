import { build, Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Our own modules that use `__dirname` at run time, and what each is bundled with instead. A file
 * tree has the package around the module; the bundle (and the binary made from it) has not.
 * - bin/rxfleet.ts reads its version from ../../package.json: the version is written in.
 * - bin/sampleHelpers.ts and streams/incus/daemonHost.ts search upwards from their directory for
 *   examples/helpers/ and scripts/lxd/: they search from scripts/package/entry.ts's packageDir()
 *   (the bundle's directory, or the binary's extracted assets).
 * Any other module of ours that names `__dirname` fails the build, so a new one cannot be missed.
 */
function rewrites(version: string): Record<string, (source: string) => string> {
  const searchFromPackageDir = (source: string) =>
    source.replace(/\b__dirname\b/g, '(globalThis as unknown as { __rxfleetPackageDir: () => string }).__rxfleetPackageDir()');
  return {
    'bin/rxfleet.ts': (source) =>
      source.replace(/JSON\.parse\(readFileSync\(join\(__dirname, '\.\.\/\.\.\/package\.json'\), 'utf8'\)\)/, JSON.stringify({ version })),
    'bin/sampleHelpers.ts': searchFromPackageDir,
    'streams/incus/daemonHost.ts': searchFromPackageDir,
  };
}

function packageFiles(root: string, version: string): Plugin {
  const table = rewrites(version);
  const seen = new Set<string>();
  return {
    name: 'rxfleet-package-files',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        const path = relative(root, args.path);
        if (path.startsWith('node_modules/') || path.startsWith('..')) return undefined;
        const source = readFileSync(args.path, 'utf8');
        const rewrite = table[path];
        const contents = rewrite === undefined ? source : rewrite(source);
        if (rewrite !== undefined) seen.add(path);
        if (/\b__dirname\b/.test(contents) && path !== 'scripts/package/entry.ts')
          throw new Error(`${path} uses __dirname, which the bundle does not have: add it to scripts/package/bundle.ts`);
        return { contents, loader: 'ts' };
      });
      b.onEnd((result) => {
        const missing = Object.keys(table).filter((path) => !seen.has(path));
        if (result.errors.length === 0 && missing.length > 0) throw new Error(`not bundled, so not rewritten: ${missing.join(', ')}`);
      });
    },
  };
}

/**
 * commander loads `child_process` when it loads (for executable subcommands, which the CLI has
 * none of): milliseconds of every command's start in the binary, where each built-in module is
 * compiled at first use. The bundle's copy loads it only if a subcommand is ever spawned; a
 * commander that words the line otherwise fails the build rather than loading it again.
 */
function commanderWithoutChildProcess(): Plugin {
  const eager = "const childProcess = require('node:child_process');";
  const deferred = "const childProcess = { spawn: (...args) => require('node:child_process').spawn(...args) };";
  return {
    name: 'rxfleet-commander-deferred-child-process',
    setup(b) {
      b.onLoad({ filter: /[\\/]node_modules[\\/]commander[\\/]lib[\\/]command\.js$/ }, (args) => {
        const source = readFileSync(args.path, 'utf8');
        if (!source.includes(eager)) throw new Error(`${args.path} no longer has "${eager}": update scripts/package/bundle.ts`);
        if ((source.match(/childProcess\.(\w+)/g) ?? []).some((use) => use !== 'childProcess.spawn'))
          throw new Error(`${args.path} uses more of child_process than spawn: update scripts/package/bundle.ts`);
        return { contents: source.replace(eager, deferred), loader: 'js' };
      });
    },
  };
}

/**
 * Optional native add-ons, which a single executable cannot load: `ws`'s, which it tries in a
 * `try` and does without (left as `require`s, the binary would print Node's warning that its
 * `require` loads built-in modules only; bundled as a module that throws, `ws` takes its
 * JavaScript path at once, as without them on disk), and pkcs11js, which only the `pkcs11`
 * security provider loads, and which then says the binary does not carry it.
 */
function absentOptional(names: string[]): Plugin {
  const filter = new RegExp(`^(${names.map((n) => n.replace(/[-/]/g, '\\$&')).join('|')})$`);
  return {
    name: 'rxfleet-absent-optional',
    setup(b) {
      b.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'absent' }));
      b.onLoad({ filter: /.*/, namespace: 'absent' }, (args) => ({
        contents: `throw Object.assign(new Error(${JSON.stringify(`${args.path} is not in this build`)}), { code: 'MODULE_NOT_FOUND' });`,
        loader: 'js',
      }));
    },
  };
}

/**
 * Bundles the whole CLI (every command, with its dependencies) into one CommonJS file `out` that
 * needs nothing beside it: the entry scripts/package/entry.ts, Node's built-ins left as they are,
 * the optional native add-ons left out (`ws` falls back to JavaScript without them; the `pkcs11`
 * security provider refuses to start in the binary, saying so).
 */
export async function bundle(root: string, out: string, version: string): Promise<void> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'scripts/package/entry.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // The kit's CommonJS build, as `require` gets it; one copy of rxjs.
    mainFields: ['main'],
    conditions: ['require'],
    tsconfig: join(root, 'tsconfig.build.json'),
    plugins: [packageFiles(root, version), commanderWithoutChildProcess(), absentOptional(['bufferutil', 'utf-8-validate', 'pkcs11js'])],
    // A single executable has no loader for `import()` ("A dynamic import callback was not
    // specified"): every one, of a built-in too, becomes a `require` in a promise.
    supported: { 'dynamic-import': false },
    // Smaller to read and to deserialise at every start (the code cache is of this text); names
    // kept, as logs and errors print class and function names.
    minify: true,
    keepNames: true,
    legalComments: 'none',
    logLevel: 'warning',
    metafile: false,
  });
  if (result.errors.length > 0) throw new Error('esbuild failed');
}
