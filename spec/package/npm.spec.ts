import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { markedProcesses, processMarker } from '../helpers/leftovers';

// The npm route: the root's `npm pack` installed with `npm install -g` into an empty prefix, from
// a directory with no workspace or package.json above it, then run from that prefix's bin. The
// tarball is packed from the build `npm test` makes first (npm's pretest), with --ignore-scripts so
// that packing does not rebuild dist/ under the other suites.
const root = resolve(__dirname, '../..');
const execFileAsync = promisify(execFile);
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
const marker = processMarker();

let scratch: string;
let prefix: string;
let tarball: string;

/** A shell's environment: npm's own variables (set when jest runs under npm) left out. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  return { ...env, ...marker.env, ...extra };
}

async function ok(file: string, args: string[], cwd: string, timeout = 300_000): Promise<string> {
  try {
    const { stdout } = await execFileAsync(file, args, { cwd, env: cleanEnv(), timeout, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { code: unknown; stdout?: string; stderr?: string };
    throw new Error(`${file} ${args.join(' ')}: exit ${String(e.code)}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

beforeAll(async () => {
  if (!existsSync(join(root, 'dist/bin/rxfleet.js'))) throw new Error('dist/ is not built: run npm run build (npm test does)');
  scratch = mkdtempSync(join(tmpdir(), 'rxfleet-package-npm-'));
  const [packed] = JSON.parse(await ok('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], root)) as [
    { filename: string },
  ];
  tarball = join(scratch, packed.filename);
  prefix = join(scratch, 'prefix');
  mkdirSync(prefix);
  const away = join(scratch, 'elsewhere');
  mkdirSync(away);
  await ok('npm', ['install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', tarball], away);
}, 600_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe(`npm install -g ./rxfleet-${version}.tgz`, () => {
  it('installs from a directory with no package.json above it', () => {
    for (let dir = join(scratch, 'elsewhere'); dirname(dir) !== dir; dir = dirname(dir))
      expect(existsSync(join(dir, 'package.json'))).toBe(false);
    expect(tarball.endsWith(`rxfleet-${version}.tgz`)).toBe(true);
  });

  it('puts rxfleet in the prefix bin, with the kit (a workspace, not on the registry) and its rxjs bundled as real files', async () => {
    const bin = join(prefix, 'bin', 'rxfleet');
    expect(lstatSync(bin).isSymbolicLink()).toBe(true);
    expect(readlinkSync(bin)).toMatch(/rxfleet\/dist\/bin\/rxfleet\.js$/);
    const modules = join(prefix, 'lib', 'node_modules', 'rxfleet', 'node_modules');
    for (const name of ['@rxfleet/operators', 'rxjs']) {
      expect(lstatSync(join(modules, name)).isDirectory()).toBe(true);
      expect(lstatSync(join(modules, name)).isSymbolicLink()).toBe(false);
    }
    expect(existsSync(join(modules, '@rxfleet/operators/dist/cjs/index.js'))).toBe(true);
    expect((await ok(bin, ['--version'], scratch)).trim()).toBe(version);
  });

  it('rxfleet demo runs from the prefix bin and provisions the whole fleet', async () => {
    const stdout = await ok(join(prefix, 'bin', 'rxfleet'), ['demo', '--nodes', '100'], join(scratch, 'elsewhere'), 120_000);
    expect(stdout).toMatch(/nodes provisioned: 100 of 100/);
    expect(stdout).toMatch(/^errors:\s+0$/m);
    expect(markedProcesses(marker)).toEqual([]);
  }, 150_000);
});
