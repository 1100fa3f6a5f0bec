import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { RXFLEET_BIN } from '../helpers/rxfleetProcess';
import { promisify } from 'node:util';
import { version } from '../../package.json';

// These run the built package (`npm test` builds first), as a user or a shell would.
const root = resolve(__dirname, '../..');
const bin = RXFLEET_BIN;
const run = promisify(execFile);

async function rxfleet(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('the rxfleet command', () => {
  it('refuses a bad option value with one clear line and a non-zero exit', async () => {
    const { code, stderr } = await rxfleet('demo', '--nodes', 'lots');
    expect(code).toBe(1);
    expect(stderr.split('\n')[0]).toBe(
      `error: option '--nodes <n>' argument 'lots' is invalid. expected a positive whole number, got "lots"`,
    );
  });

  it('refuses an unknown command', async () => {
    const { code, stderr } = await rxfleet('provisoin');
    expect(code).toBe(1);
    expect(stderr).toMatch(/unknown command 'provisoin'/);
  });

  it("runs upstream's default command without its name, as choria-provisioner --config x.yaml does", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rxfleet-default-'));
    try {
      // A configuration that fails its checks: the provisioner's own refusal shows run ran.
      writeFileSync(join(dir, 'bad.yaml'), 'workers: lots\n');
      const plain = await rxfleet('--config', join(dir, 'bad.yaml'), '--choria-config', join(dir, 'missing.cfg'));
      expect(plain.code).toBe(1);
      expect(plain.stderr).toContain('rxfleet provision: not started');
      const debug = await rxfleet('--debug', `--config=${join(dir, 'bad.yaml')}`);
      expect(debug.code).toBe(1);
      expect(debug.stderr).toContain('rxfleet provision: not started');
      // With a command named, it is that command.
      expect((await rxfleet('validate', '--config', join(dir, 'bad.yaml'))).stderr).not.toContain('rxfleet provision');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints its version and help', async () => {
    expect((await rxfleet('--version')).stdout.trim()).toBe(version);
    const help = (await rxfleet('--help')).stdout;
    for (const command of ['demo', 'provision|run', 'simulate', 'validate']) expect(help).toContain(command);
  });
});

describe('the package entry', () => {
  let project: string;

  beforeAll(() => {
    // A user's project with rxfleet installed (linked) in its node_modules.
    project = mkdtempSync(join(tmpdir(), 'rxfleet-user-'));
    mkdirSync(join(project, 'node_modules'));
    symlinkSync(root, join(project, 'node_modules', 'rxfleet'), 'dir');
    // npm would hoist rxfleet's own dependency beside it; the user's pipeline imports it too.
    symlinkSync(join(root, 'node_modules', 'rxjs'), join(project, 'node_modules', 'rxjs'), 'dir');
    writeFileSync(join(project, 'package.json'), '{"name":"user","version":"1.0.0"}');
  });

  afterAll(() => rmSync(project, { recursive: true, force: true }));

  const operators = [
    'admit',
    'AdmissionLedger',
    'pauseWhen',
    'PauseGate',
    'workerPool',
    'readPerKey',
    'releaseInOrder',
    'OrderedLine',
    'RingQueue',
    'debounceByKey',
    'retryLadder',
    'pacedSweep',
    'collectUntilIdle',
    'fromAbortable',
  ];

  it('can be required from CommonJS and exports every operator', async () => {
    const script = `const m = require('rxfleet'); console.log(JSON.stringify(${JSON.stringify(operators)}.map((n) => typeof m[n])))`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: project });
    expect(JSON.parse(stdout)).toEqual(operators.map(() => 'function'));
  });

  it("exports the enricher's read-then-follow for consumers: followFleet and mergeFleet", async () => {
    const script = `const m = require('rxfleet'); console.log(JSON.stringify([typeof m.followFleet, typeof m.mergeFleet]))`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: project });
    expect(JSON.parse(stdout)).toEqual(['function', 'function']);
  });

  it('can be imported by name from an ES module, and works in a pipeline', async () => {
    const script = `
      import { of, delay } from 'rxjs';
      import { releaseInOrder, TRASH } from 'rxfleet';
      of(30, 10, 0, 20).pipe(releaseInOrder((ms) => (ms === 0 ? of(TRASH) : of(ms).pipe(delay(ms))))).subscribe((v) => console.log(v));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: project });
    expect(stdout.trim().split('\n')).toEqual(['30', '10', '20']);
  });
});
