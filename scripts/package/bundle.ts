import { build, Plugin } from 'esbuild';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { dependencyRewrites } from './dependencyRewrites';

/** Which bundle: the single executable's, or the npm install's `dist/bin/rxfleet.bundle.cjs`. */
export type BundleTarget = 'binary' | 'npm';

/** Which program: the whole CLI, or only the operator's reads (bin/readProgram.ts: `status`, `history`). */
export type BundleProgram = 'cli' | 'read';

/** Modules that search upwards from their own directory for files of the package. */
const SEARCH_UPWARDS = ['bin/sampleHelpers.ts', 'streams/incus/daemonHost.ts'];

/**
 * Our own modules that use `__dirname` at run time, and what each is bundled with instead. A file
 * tree has the package around the module; the binary has not.
 * - bin/rootProgram.ts reads its version from ../../package.json: the version is written in.
 * - bin/sampleHelpers.ts and streams/incus/daemonHost.ts search upwards from their directory for
 *   examples/helpers/ and scripts/lxd/: in the binary they search from scripts/package/entry.ts's
 *   packageDir() (its extracted assets); the npm bundle's own directory, dist/bin/, lies under the
 *   same package as theirs, so there they keep `__dirname`.
 * Any other module of ours that names `__dirname` fails the build, so a new one cannot be missed.
 */
function rewrites(version: string, target: BundleTarget): Record<string, (source: string) => string> {
  const searchFromPackageDir = (source: string) =>
    target === 'npm'
      ? source
      : source.replace(/\b__dirname\b/g, '(globalThis as unknown as { __rxfleetPackageDir: () => string }).__rxfleetPackageDir()');
  return {
    'bin/rootProgram.ts': (source) =>
      source.replace(/JSON\.parse\(readFileSync\(join\(__dirname, '\.\.\/\.\.\/package\.json'\), 'utf8'\)\)/, JSON.stringify({ version })),
    ...Object.fromEntries(SEARCH_UPWARDS.map((path) => [path, searchFromPackageDir])),
  };
}

function packageFiles(root: string, version: string, target: BundleTarget, program: BundleProgram): Plugin {
  const table = rewrites(version, target);
  // The reads' program has none of the modules that search for the package's files.
  const required = Object.keys(table).filter((path) => program === 'cli' || !SEARCH_UPWARDS.includes(path));
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
        const keepsDirname = path === 'scripts/package/entry.ts' || (target === 'npm' && SEARCH_UPWARDS.includes(path));
        if (/\b__dirname\b/.test(contents) && !keepsDirname)
          throw new Error(`${path} uses __dirname, which the bundle does not have: add it to scripts/package/bundle.ts`);
        return { contents, loader: 'ts' };
      });
      b.onEnd((result) => {
        const missing = required.filter((path) => !seen.has(path));
        if (result.errors.length === 0 && missing.length > 0) throw new Error(`not bundled, so not rewritten: ${missing.join(', ')}`);
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
 * Bundles the whole CLI (every command, with its dependencies) into one CommonJS file `out` of
 * ASCII only, headed by a hash of its text (bin/compileCache.ts keys its code caches by it), Node's
 * built-ins left as they are, a few dependencies' lines rewritten (./dependencyRewrites.ts).
 * - `binary`: from scripts/package/entry.ts, needing nothing beside it; the optional native add-ons
 *   left out (`ws` falls back to JavaScript without them; the `pkcs11` security provider refuses
 *   to start in the binary, saying so).
 * - `npm`: from bin/program.ts, for dist/bin/rxfleet.js to start; the native add-ons are loaded
 *   from the install's node_modules, as the modules they are bundled from would.
 * With `program` `read`, only the operator's reads instead (bin/readProgram.ts, for both targets):
 * the launchers run that bundle for `status` and `history`.
 */
export async function bundle(
  root: string,
  out: string,
  version: string,
  target: BundleTarget,
  program: BundleProgram = 'cli',
): Promise<void> {
  const natives = ['bufferutil', 'utf-8-validate', 'pkcs11js'];
  const entry = program === 'read' ? 'bin/readProgram.ts' : target === 'binary' ? 'scripts/package/entry.ts' : 'bin/program.ts';
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, entry)],
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    // The kit's CommonJS build, as `require` gets it; one copy of rxjs.
    mainFields: ['main'],
    conditions: ['require'],
    tsconfig: join(root, 'tsconfig.build.json'),
    plugins: [
      packageFiles(root, version, target, program),
      dependencyRewrites(),
      ...(target === 'binary' ? [absentOptional(natives)] : []),
    ],
    external: target === 'npm' ? natives : [],
    // A single executable has no loader for `import()` ("A dynamic import callback was not
    // specified"), nor has a bundle run by bin/compileCache.ts: every one, of a built-in too,
    // becomes a `require` in a promise.
    supported: { 'dynamic-import': false },
    // Smaller to read at every start, and V8 parses what the code cache does not hold; names
    // kept, as logs and errors print class and function names.
    minify: true,
    keepNames: true,
    legalComments: 'none',
    logLevel: 'warning',
    metafile: false,
    write: false,
  });
  if (result.errors.length > 0) throw new Error('esbuild failed');
  // ASCII only, so that a launcher reads it as latin1 (faster than UTF-8, and a one-byte string in
  // V8 at half the memory): esbuild escapes strings but leaves a regular expression's characters
  // (@nats-io/jetstream's duration has a µ), which an escape matches alike.
  const text = result.outputFiles[0].text.replace(/[^\t\n\r\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  writeFileSync(out, `// rxfleet-bundle ${createHash('sha256').update(text).digest('hex').slice(0, 16)}\n${text}`, 'latin1');
}

/**
 * The single executable's main script: scripts/package/seaMain.ts, which runs the bundle `bundle`
 * made for the binary (one of its assets) with a code cache.
 */
export async function bundleSeaMain(root: string, out: string): Promise<void> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'scripts/package/seaMain.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    tsconfig: join(root, 'tsconfig.build.json'),
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  if (result.errors.length > 0) throw new Error('esbuild failed');
}
