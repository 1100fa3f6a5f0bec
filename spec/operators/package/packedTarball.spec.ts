import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import * as semver from 'semver';
import { BuildOptions, Metafile, build } from 'esbuild';
import { extractSamples, samplesWorld } from './readmeSamples';

/**
 * The kit as an RxJS user gets it: `npm pack` of the workspace, the tarball installed beside
 * exactly the lowest rxjs its peer range claims and beside the newest 7.x, in scratch projects;
 * compiled and run under nodenext (ES module and CommonJS), node10 and bundler; bundled with
 * esbuild for the browser and for Node; every README sample compiled as written.
 *
 * The workspace is packed from a copy: its `prepack` rebuilds `dist/`, and rebuilding the real
 * operators/dist while other suites run the built daemons would pull it from under them. Each
 * scratch project is installed once for the whole file.
 */

const root = join(__dirname, '..', '..', '..');
const consumer = join(__dirname, 'consumer');
const bundles = join(__dirname, 'bundle');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const manifest = JSON.parse(readFileSync(join(root, 'operators', 'package.json'), 'utf8')) as {
  license: string;
  engines: { node: string };
  peerDependencies: { rxjs: string };
  sideEffects: boolean;
};
const lowestRxjs = semver.minVersion(manifest.peerDependencies.rxjs)?.version as string;

// The line every TypeScript form of the consumer prints (consumer/pipeline.ts); the plain ES module
// and CommonJS ones also check that `import` and `require` in one process give one kit.
const expected = {
  pooled: ['A', 'B', 'A'],
  inOrder: [30, 10, 20],
  held: 0,
  frees: 1,
  sameRxjs: true,
  routed: 'boom',
  noOutcome: 'NoOutcomeError',
};

// Strict, as a careful user compiles: every strict flag, and the libraries' declarations checked.
const strict = {
  target: 'ES2022',
  lib: ['ES2022', 'DOM'],
  // No @types/node: what the kit's and rxjs's declarations need (AbortSignal, console) is the DOM's.
  types: [],
  strict: true,
  noImplicitOverride: true,
  noUnusedLocals: true,
  noUnusedParameters: true,
  noImplicitReturns: true,
  noFallthroughCasesInSwitch: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  skipLibCheck: false,
};

// npm, run by `npm test`, passes its own settings down as npm_* variables (the workspace, the
// lifecycle event...); the scratch projects must not inherit them.
function cleanEnv(extraPath?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!/^npm_/i.test(name)) env[name] = value;
  if (extraPath !== undefined) env.PATH = `${extraPath}${delimiter}${env.PATH ?? ''}`;
  return env;
}

async function run(command: string, args: string[], cwd: string, env = cleanEnv()): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(command, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const failure = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}: ${failure.message}\n${failure.stdout ?? ''}\n${failure.stderr ?? ''}`);
  }
}

const node = async (script: string, cwd: string): Promise<unknown> => JSON.parse(await run(process.execPath, [script], cwd));

/** Type-checks (and emits, unless `noEmit`) `files` in `project` with the given module settings. */
async function compile(project: string, name: string, options: Record<string, unknown>, files: string[]): Promise<void> {
  writeFileSync(join(project, `tsconfig.${name}.json`), JSON.stringify({ compilerOptions: { ...strict, ...options }, files }));
  await run(process.execPath, [tsc, '-p', `tsconfig.${name}.json`], project);
}

/** Bundles `entry` with esbuild, as an application's build does, and returns the metafile. */
async function bundle(project: string, entry: string, outfile: string, options: BuildOptions): Promise<Metafile> {
  const result = await build({
    entryPoints: [join(project, entry)],
    outfile: join(project, outfile),
    absWorkingDir: project,
    bundle: true,
    metafile: true,
    logLevel: 'silent',
    ...options,
  });
  return result.metafile as Metafile;
}

/** The builds of a package a bundle took its files from (`cjs`, `esm5`, ...), by package name. */
function buildsOf(metafile: Metafile, pkg: string): string[] {
  const pattern = new RegExp(`node_modules/${pkg}/dist/([^/]+)/`);
  return [...new Set(Object.keys(metafile.inputs).flatMap((path) => pattern.exec(path)?.[1] ?? []))].sort();
}

/** Bytes each of the kit's files contributes to a bundle's one output. */
function kitBytes(metafile: Metafile): Map<string, number> {
  const [output] = Object.values(metafile.outputs);
  const bytes = new Map<string, number>();
  for (const [path, input] of Object.entries(output.inputs)) {
    const at = path.indexOf('@rxfleet/operators/');
    if (at >= 0) bytes.set(path.slice(at + '@rxfleet/operators/'.length), input.bytesInOutput);
  }
  return bytes;
}

interface Packed {
  filename: string;
  files: { path: string }[];
}

describe('@rxfleet/operators as a packed tarball', () => {
  let scratch: string;
  let tarball: string;
  let packed: Packed;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'rxfleet-kit-pack-'));
    const stage = join(scratch, 'workspace');
    const operators = join(root, 'operators');
    cpSync(operators, stage, {
      recursive: true,
      filter: (source) =>
        !relative(operators, source)
          .split(sep)
          .some((part) => part === 'dist' || part === 'node_modules'),
    });
    // The workspace's own build resolves rxjs and tsc where the repository has them.
    symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'), 'dir');
    const out = await run('npm', ['pack', '--json', '--pack-destination', scratch], stage, cleanEnv(join(root, 'node_modules', '.bin')));
    [packed] = JSON.parse(out) as Packed[];
    tarball = join(scratch, packed.filename);
  }, 240_000);

  afterAll(() => {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  it('holds the manifest, the README, the LICENSE, both builds with their maps and declarations, and the sources the maps point at', () => {
    const paths = packed.files.map((f) => f.path).sort();
    const shipped =
      /^(package\.json|README\.md|LICENSE|dist\/(cjs|esm)\/(package\.json|.+\.(js|js\.map|d\.ts|d\.ts\.map))|([\w]+\/)?\w+\.ts)$/;
    expect(paths.filter((p) => !shipped.test(p))).toEqual([]);
    for (const build of ['cjs', 'esm']) {
      for (const file of ['index', 'testing/index', 'releaseInOrder', 'internal/Line']) {
        const js = `dist/${build}/${file}.js`;
        expect(paths).toEqual(expect.arrayContaining([js, `${js}.map`, `dist/${build}/${file}.d.ts`, `dist/${build}/${file}.d.ts.map`]));
      }
    }
    // Every source a map names is in the package, where the map says.
    const missing: string[] = [];
    for (const map of paths.filter((p) => p.endsWith('.map'))) {
      const { sources } = JSON.parse(readFileSync(join(scratch, 'workspace', map), 'utf8')) as { sources: string[] };
      for (const source of sources) {
        const target = relative(join(scratch, 'workspace'), resolve(dirname(join(scratch, 'workspace', map)), source));
        if (!paths.includes(target.split(sep).join('/'))) missing.push(`${map} -> ${source}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('ships only the package: an API reference built beside the builds (dist/api, by typedoc) stays out', async () => {
    const stage = join(scratch, 'workspace');
    mkdirSync(join(stage, 'dist', 'api'), { recursive: true });
    writeFileSync(join(stage, 'dist', 'api', 'index.html'), '<html></html>');
    // Without scripts: prepack's build would remove dist/ first and hide what `files` lets through.
    const out = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], stage, cleanEnv(join(root, 'node_modules', '.bin')));
    const [dry] = JSON.parse(out) as Packed[];
    expect(dry.files.map((f) => f.path).filter((p) => p.startsWith('dist/api'))).toEqual([]);
    expect(dry.files.map((f) => f.path)).toContain('dist/cjs/index.js');
    rmSync(join(stage, 'dist', 'api'), { recursive: true, force: true });
  });

  it('says what a library needs: its licence, its repository and home page, the Node it runs on, rxjs as the only peer', () => {
    const packedManifest = JSON.parse(readFileSync(join(scratch, 'workspace', 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest.license).toBe('Apache-2.0');
    expect(readFileSync(join(root, 'operators', 'LICENSE'), 'utf8')).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(packedManifest).toMatchObject({
      repository: { type: 'git', url: expect.stringMatching(/^git\+https:\/\//), directory: 'operators' },
      homepage: expect.stringMatching(/^https:\/\/.+#readme$/),
      // ES2022 with static blocks, `AbortSignal.abort(reason)`, `Error` causes: Node 18 and later.
      engines: { node: '>=18' },
      peerDependencies: { rxjs: '^7.5.5' },
      sideEffects: false,
    });
    expect(packedManifest.dependencies).toBeUndefined();
    expect(lowestRxjs).toBe('7.5.5');
  });

  it('links from its README only to what is in the package, or to absolute addresses', () => {
    const readme = readFileSync(join(scratch, 'workspace', 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
    expect(links).toContain('LICENSE');
    const paths = packed.files.map((f) => f.path);
    const broken = links.filter((link) => !/^(https:\/\/|#)/.test(link) && !paths.includes(link.split('#')[0].replace(/^\.\//, '')));
    expect(broken).toEqual([]);
  });

  describe.each([
    ['the lowest rxjs the peer range claims', lowestRxjs],
    ['the newest rxjs 7.x', '7'],
  ])('installed beside %s', (_, version) => {
    let project: string;
    let installed: string;

    beforeAll(async () => {
      project = join(scratch, `rxjs-${version.replace(/\W/g, '')}`);
      mkdirSync(project);
      cpSync(consumer, project, { recursive: true });
      cpSync(join(project, 'pipeline.ts'), join(project, 'pipeline.mts'));
      cpSync(join(project, 'types.ts'), join(project, 'types.mts'));
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'kit-consumer', version: '1.0.0', private: true }));
      await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `rxjs@${version}`], project);
      installed = join(project, 'node_modules', '@rxfleet', 'operators');
    }, 240_000);

    it('brings nothing but itself: rxjs (and its tslib) come from the project, one copy, of the version asked for', () => {
      const rxjs = JSON.parse(readFileSync(join(project, 'node_modules', 'rxjs', 'package.json'), 'utf8')) as { version: string };
      if (version === lowestRxjs) expect(rxjs.version).toBe(lowestRxjs);
      else expect(semver.satisfies(rxjs.version, '^7.8.2')).toBe(true);
      expect(
        readdirSync(join(project, 'node_modules'))
          .filter((n) => !n.startsWith('.'))
          .sort(),
      ).toEqual(['@rxfleet', 'rxjs', 'tslib']);
      // The declarations carry the doc comments an editor shows.
      expect(readFileSync(join(installed, 'dist', 'cjs', 'workerPool.d.ts'), 'utf8')).toContain('First come, first served');
    });

    it('compiles and runs under nodenext as an ES module and as CommonJS, under node10 and under bundler', async () => {
      await compile(project, 'esm', { module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out-esm' }, ['pipeline.mts', 'types.mts']);
      await compile(project, 'cjs', { module: 'nodenext', moduleResolution: 'nodenext', outDir: 'out-cjs' }, ['pipeline.ts', 'types.ts']);
      await compile(project, 'node10', { module: 'commonjs', moduleResolution: 'node10', outDir: 'out-node10' }, [
        'pipeline.ts',
        'types.ts',
      ]);
      await compile(project, 'bundler', { module: 'esnext', moduleResolution: 'bundler', noEmit: true }, ['pipeline.ts', 'types.ts']);
      await bundle(project, 'pipeline.ts', 'out-bundler/pipeline.mjs', { platform: 'node', format: 'esm' });
      const runs = ['out-esm/pipeline.mjs', 'out-cjs/pipeline.js', 'out-node10/pipeline.js', 'out-bundler/pipeline.mjs'];
      for (const script of runs) expect([script, await node(script, project)]).toEqual([script, expected]);
      // Plain Node: `import` and `require` in one process load one kit (its `node` condition).
      for (const script of ['pipeline.mjs', 'pipeline.cjs']) {
        expect([script, await node(script, project)]).toEqual([script, { ...expected, sameKit: true }]);
      }
      // Five compilers with every declaration checked: minutes on a machine other work shares.
    }, 600_000);
  });

  describe('bundled into an application with esbuild, beside the newest rxjs', () => {
    let project: string;

    beforeAll(() => {
      project = join(scratch, 'rxjs-7');
      cpSync(bundles, join(project, 'bundle'), { recursive: true });
    });

    it.each([
      ['browser', 'app.mjs', 'esm', 'esm5'],
      ['browser', 'app.cjs', 'cjs', 'cjs'],
      ['node', 'app.mjs', 'esm', 'cjs'],
      ['node', 'app.cjs', 'esm', 'cjs'],
    ] as const)(
      "for the %s, %s: one rxjs in the bundle, the kit built as its imports ask, and its Observables are the app's",
      async (platform, app, kit, rxjs) => {
        const outfile = `out-bundle/${platform}-${app}.js`;
        const metafile = await bundle(project, `bundle/${app}`, outfile, { platform, format: platform === 'node' ? 'cjs' : 'iife' });
        expect([buildsOf(metafile, 'rxjs'), buildsOf(metafile, '@rxfleet/operators')]).toEqual([[rxjs], [kit]]);
        expect(await node(outfile, project)).toEqual({ sameRxjs: true, out: ['read 30ms', 'read 10ms', 'read 20ms'] });
      },
      60_000,
    );

    it('keeps only what is imported: one operator weighs less than the whole kit by the size of everything else', async () => {
      const options: BuildOptions = { platform: 'browser', format: 'esm', minify: true, external: ['rxjs'] };
      const all = await bundle(project, 'bundle/all.mjs', 'out-bundle/all.js', options);
      const one = await bundle(project, 'bundle/one.mjs', 'out-bundle/one.js', options);
      const [allBytes, oneBytes] = [all, one].map((m) => Object.values(m.outputs)[0].bytes);
      const inAll = kitBytes(all);
      const inOne = new Set([...kitBytes(one)].filter(([, bytes]) => bytes > 0).map(([file]) => file));
      // What releaseInOrder needs, and nothing else.
      expect([...inOne].sort()).toEqual(
        ['RingQueue.js', 'internal/Line.js', 'internal/LineOutput.js', 'internal/OperatorSubscriber.js', 'releaseInOrder.js'].map(
          (f) => `dist/esm/${f}`,
        ),
      );
      const notImported = [...inAll].filter(([file]) => !inOne.has(file)).reduce((sum, [, bytes]) => sum + bytes, 0);
      expect(notImported).toBeGreaterThan(allBytes / 2);
      expect(allBytes - oneBytes).toBeGreaterThanOrEqual(notImported);
    }, 60_000);

    it("a bundle that both imports and requires the kit holds both builds, and their errors are instances of each other's classes", async () => {
      const metafile = await bundle(project, 'bundle/mixed.mjs', 'out-bundle/mixed.js', { platform: 'browser', format: 'iife' });
      expect(buildsOf(metafile, '@rxfleet/operators')).toEqual(['cjs', 'esm']);
      expect(await node('out-bundle/mixed.js', project)).toEqual({ twoClasses: true, crossInstanceof: true, distinct: false });
    }, 60_000);
  });

  describe("the README's samples", () => {
    it('compile as written, each a module of its own, against the installed kit and the newest rxjs, in strict nodenext', async () => {
      const project = join(scratch, 'rxjs-7');
      const samples = extractSamples(readFileSync(join(project, 'node_modules', '@rxfleet', 'operators', 'README.md'), 'utf8'));
      expect(samples.length).toBeGreaterThanOrEqual(15);
      mkdirSync(join(project, 'samples'));
      const files = samples.map(({ code, extension }, i) => {
        const file = `samples/sample${i + 1}.${extension}`;
        // `export {}` keeps each TypeScript sample a module of its own; a CommonJS one is by its `require`.
        writeFileSync(join(project, file), extension === 'mts' ? `${code}\nexport {};\n` : code);
        return file;
      });
      writeFileSync(join(project, 'samples', 'world.d.ts'), samplesWorld);
      await compile(
        project,
        'samples',
        { module: 'nodenext', moduleResolution: 'nodenext', noEmit: true, noUnusedLocals: false, allowJs: true, checkJs: true },
        ['samples/world.d.ts', ...files],
      );
    }, 120_000);
  });
});
