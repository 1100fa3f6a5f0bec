import { build, Plugin } from 'esbuild';
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Our own modules that use `__dirname` at run time, and what each is bundled with instead. A file
 * tree has the package around the module; the bundle (and the binary made from it) has not.
 * - bin/rxfleet.ts reads its version from ../../package.json: the version is written in.
 * - bin/sampleHelpers.ts and streams/incus/lxdHost.ts search upwards from their directory for
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
    'streams/incus/lxdHost.ts': searchFromPackageDir,
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
 * Bundles the whole CLI (every command, with its dependencies) into one CommonJS file `out` that
 * needs nothing beside it: the entry scripts/package/entry.ts, Node's built-ins left as they are,
 * the optional native add-ons of `ws` left out (it falls back to JavaScript without them).
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
    external: ['bufferutil', 'utf-8-validate'],
    tsconfig: join(root, 'tsconfig.build.json'),
    plugins: [packageFiles(root, version)],
    legalComments: 'none',
    logLevel: 'warning',
    metafile: false,
  });
  if (result.errors.length > 0) throw new Error('esbuild failed');
}
