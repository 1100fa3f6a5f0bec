import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnSupervised } from '../../../streams/helper/supervisedSpawn';
import { HelperOutputBudget } from '../../../streams/helper/outputBudget';
import { waitFor } from '../../helpers/waitFor';

const SCRIPT = resolve(__dirname, '../../fixtures/helpers/scripted-helper.mjs');

/** Whether a process is running (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

describe('spawnSupervised: a helper tied to the life of the process that started it', () => {
  let dir: string;
  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-supervised-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('kills the helper and what it started when its parent is killed with SIGKILL (issue 14 item 5)', async () => {
    const pidFile = join(dir, 'grandchild.pid');
    const parent = spawn(process.execPath, ['--import', 'tsx', resolve(__dirname, '../../fixtures/supervisedParent.ts'), pidFile], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    parent.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor(
        () => out.includes('\n') && existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '',
        'the helper and its child to start',
        20_000,
      );
      const helper = Number(out.trim());
      const grandchild = Number(readFileSync(pidFile, 'utf8'));
      expect([alive(helper), alive(grandchild)]).toEqual([true, true]);
      parent.kill('SIGKILL');
      await waitFor(() => !alive(helper) && !alive(grandchild), 'the helper group to be gone after its parent died', 5000);
    } finally {
      if (parent.exitCode === null && parent.signalCode === null) parent.kill('SIGKILL');
    }
  });

  it('is the executable itself: its pid leads its group, its signal is its own, and arguments are not read by a shell', async () => {
    const child = spawnSupervised(SCRIPT, ['kill-self']);
    child.stdin?.end('{}');
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => child.on('exit', (c, s) => done([c, s])));
    expect([code, signal]).toEqual([null, 'SIGTERM']);
    const echo = spawnSupervised('/bin/echo', ['$HOME', '*', 'a|b', '"q"']);
    let text = '';
    echo.stdout?.on('data', (d: Buffer) => (text += d.toString()));
    await new Promise((done) => echo.on('close', done));
    expect(text).toBe('$HOME * a|b "q"\n');
  });

  it('refuses what cannot run as spawn does, before any process starts', () => {
    expect(() => spawnSupervised('/nonexistent/helper', [])).toThrow('spawn /nonexistent/helper ENOENT');
    expect(() => spawnSupervised('no-such-helper-on-path', [], { env: { PATH: '/usr/bin:/bin' } })).toThrow(
      'spawn no-such-helper-on-path ENOENT',
    );
    expect(() => spawnSupervised('/tmp', [])).toThrow('spawn /tmp EACCES');
    expect(() => spawnSupervised(join(__dirname, 'supervisedSpawn.spec.ts'), [])).toThrow(/EACCES$/);
    // Found on PATH, as spawn finds it.
    const ls = spawnSupervised('true', [], { env: { PATH: '/usr/bin:/bin' } });
    return new Promise((done) => ls.on('exit', (code) => done(expect(code).toBe(0))));
  });
});

describe('HelperOutputBudget', () => {
  it('takes what fits, refuses what does not, and is given back what a run held', () => {
    const budget = new HelperOutputBudget(100);
    expect([budget.take(60), budget.take(50), budget.take(40), budget.held]).toEqual([true, false, true, 100]);
    budget.give(60);
    expect([budget.held, budget.take(60), budget.take(1)]).toEqual([40, true, false]);
  });
});
