import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative, sep } from 'node:path';
import { promisify } from 'node:util';

/**
 * The kit as an RxJS user gets it: `npm pack` of the workspace, the tarball installed beside
 * rxjs 7.5 and 7.8 in scratch projects, type-checked with this repository's TypeScript and run
 * from ES modules, CommonJS and compiled TypeScript (spec/operators/package/consumer/).
 *
 * The workspace is packed from a copy: its `prepack` rebuilds `dist/`, and rebuilding the real
 * operators/dist while other suites run the built daemons would pull it from under them.
 */

const root = join(__dirname, '..', '..', '..');
const consumer = join(__dirname, 'consumer');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
// The lines every form of the consumer prints: see consumer/pipeline.*.
const expected = {
  pooled: ['A', 'B', 'A'],
  inOrder: [30, 10, 20],
  held: 0,
  releases: 1,
  sameRxjs: true,
  routed: 'boom',
  noOutcome: 'NoOutcomeError',
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
  }, 120_000);

  afterAll(() => {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  it('holds the manifest, the README, the LICENSE and the build with declarations, and nothing else', () => {
    const paths = packed.files.map((f) => f.path).sort();
    expect(paths.filter((p) => !/^(package\.json|README\.md|LICENSE|dist\/.+\.(js|d\.ts))$/.test(p))).toEqual([]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'LICENSE',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/testing/index.js',
        'dist/testing/index.d.ts',
      ]),
    );
  });

  it("claims the licence its LICENSE holds (Apache-2.0) and the root's Node lines", () => {
    const manifest = JSON.parse(readFileSync(join(root, 'operators', 'package.json'), 'utf8')) as {
      license: string;
      engines: { node: string };
    };
    const rootManifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { license: string; engines: { node: string } };
    expect(manifest.license).toBe('Apache-2.0');
    expect(manifest.engines).toEqual(rootManifest.engines);
    expect(readFileSync(join(root, 'operators', 'LICENSE'), 'utf8')).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
  });

  describe.each([
    ['7.5', '~7.5.0'],
    ['7.8', '~7.8.0'],
  ])('installed beside rxjs %s', (_, range) => {
    let project: string;
    let installed: string;

    beforeAll(async () => {
      project = join(scratch, `rxjs-${range.replace(/\W/g, '')}`);
      mkdirSync(project);
      cpSync(consumer, project, { recursive: true });
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'kit-consumer', version: '1.0.0', private: true }));
      await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, `rxjs@${range}`], project);
      installed = join(project, 'node_modules', '@rxfleet', 'operators');
    }, 120_000);

    it('brings nothing but itself: rxjs (and its tslib) come from the project, one copy', () => {
      const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
      expect(manifest.peerDependencies).toEqual({ rxjs: '^7.5.0' });
      expect(manifest.dependencies).toBeUndefined();
      expect(
        readdirSync(join(project, 'node_modules'))
          .filter((n) => !n.startsWith('.'))
          .sort(),
      ).toEqual(['@rxfleet', 'rxjs', 'tslib']);
      expect(readdirSync(installed).sort()).toEqual(['LICENSE', 'README.md', 'dist', 'package.json']);
      // The declarations carry the doc comments an editor shows.
      expect(readFileSync(join(installed, 'dist', 'workerPool.d.ts'), 'utf8')).toContain('First come, first served');
    });

    it('type-checks (node16 for ES module and CommonJS TypeScript, node10 through typesVersions) and runs from ESM, CJS and TS', async () => {
      const options = {
        target: 'ES2022',
        lib: ['ES2022'],
        // A Node user's setup: its AbortSignal comes from @types/node (rxjs's own declarations need it).
        typeRoots: [join(root, 'node_modules', '@types')],
        types: ['node'],
        strict: true,
        skipLibCheck: false,
      };
      writeFileSync(
        join(project, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: { ...options, module: 'node16', moduleResolution: 'node16', outDir: 'out', rootDir: '.' },
          files: ['pipeline.ts', 'pipeline.mts', 'types.ts'],
        }),
      );
      writeFileSync(
        join(project, 'tsconfig.node10.json'),
        JSON.stringify({
          compilerOptions: { ...options, module: 'commonjs', moduleResolution: 'node10', noEmit: true },
          files: ['pipeline.ts', 'types.ts'],
        }),
      );
      await run(process.execPath, [tsc, '-p', 'tsconfig.json'], project);
      await run(process.execPath, [tsc, '-p', 'tsconfig.node10.json'], project);

      for (const script of ['pipeline.mjs', 'pipeline.cjs', join('out', 'pipeline.js'), join('out', 'pipeline.mjs')]) {
        const printed = await run(process.execPath, [script], project);
        expect([script, JSON.parse(printed)]).toEqual([script, expected]);
      }
    }, 120_000);
  });
});
