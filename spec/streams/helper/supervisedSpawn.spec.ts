import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { GroupSupervisor } from '../../../streams/helper/groupSupervisor';
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

  /** Starts the fixture parent in `mode`; resolves once its helper and the helper's child run. */
  async function startParent(mode: string, name: string) {
    const pidFile = join(dir, `${name}.pid`);
    const parent = spawn(process.execPath, ['--import', 'tsx', resolve(__dirname, '../../fixtures/supervisedParent.ts'), pidFile, mode], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    parent.stdout?.on('data', (d: Buffer) => (out += d.toString()));
    const last = (what: string): number | undefined => {
      const found = [...out.matchAll(new RegExp(`^${what} (\\d+)$`, 'gm'))].pop();
      return found === undefined ? undefined : Number(found[1]);
    };
    await waitFor(
      () => last('helper') !== undefined && last('supervisor') !== undefined && existsSync(pidFile) && readFileSync(pidFile, 'utf8') !== '',
      'the helper and its child to start',
      20_000,
    );
    const pids = { helper: last('helper') as number, grandchild: Number(readFileSync(pidFile, 'utf8')) };
    expect([alive(pids.helper), alive(pids.grandchild)]).toEqual([true, true]);
    const stop = (): void => {
      if (parent.exitCode === null && parent.signalCode === null) parent.kill('SIGKILL');
    };
    return { parent, pids, supervisor: () => last('supervisor') as number, stop };
  }

  it('kills the helper and what it started when its parent is killed with SIGKILL (issue 14 item 5)', async () => {
    const { parent, pids, stop } = await startParent('registered', 'registered');
    try {
      parent.kill('SIGKILL');
      await waitFor(() => !alive(pids.helper) && !alive(pids.grandchild), 'the helper group to be gone after its parent died', 5000);
      expect([alive(pids.helper), alive(pids.grandchild)]).toEqual([false, false]);
    } finally {
      stop();
    }
  });

  it('kills a persistent helper process and what it started when its parent is killed with SIGKILL', async () => {
    const { parent, pids, stop } = await startParent('persistent', 'persistent');
    try {
      parent.kill('SIGKILL');
      await waitFor(() => !alive(pids.helper) && !alive(pids.grandchild), 'the persistent helper group to be gone', 5000);
      expect([alive(pids.helper), alive(pids.grandchild)]).toEqual([false, false]);
    } finally {
      stop();
    }
  });

  it('kills a helper its parent died before registering (between the fork and the registration line)', async () => {
    const { parent, pids, stop } = await startParent('unregistered', 'unregistered');
    try {
      parent.kill('SIGKILL');
      await waitFor(() => !alive(pids.helper) && !alive(pids.grandchild), 'the unregistered helper group to be gone', 5000);
      expect([alive(pids.helper), alive(pids.grandchild)]).toEqual([false, false]);
    } finally {
      stop();
    }
  });

  it('survives a SIGKILL of the supervisor alone: a new one takes over the live groups', async () => {
    const { parent, pids, supervisor, stop } = await startParent('registered', 'resupervised');
    try {
      const first = supervisor();
      process.kill(first, 'SIGKILL');
      await waitFor(() => supervisor() !== first, 'a new supervisor', 5000);
      // The helper lives on under the new supervisor, until its parent dies.
      expect([alive(pids.helper), alive(pids.grandchild), alive(supervisor())]).toEqual([true, true, true]);
      parent.kill('SIGKILL');
      await waitFor(
        () => !alive(pids.helper) && !alive(pids.grandchild) && !alive(supervisor()),
        'the helper group and the supervisor to be gone',
        5000,
      );
    } finally {
      stop();
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

  it('refuses what cannot run as spawn does, and a helper it cannot supervise, before any process starts', () => {
    expect(() => spawnSupervised('/nonexistent/helper', [])).toThrow('spawn /nonexistent/helper ENOENT');
    expect(() => spawnSupervised('no-such-helper-on-path', [], { env: { PATH: '/usr/bin:/bin' } })).toThrow(
      'spawn no-such-helper-on-path ENOENT',
    );
    expect(() => spawnSupervised('/tmp', [])).toThrow('spawn /tmp EACCES');
    expect(() => spawnSupervised(join(__dirname, 'supervisedSpawn.spec.ts'), [])).toThrow(/EACCES$/);
    // No supervisor, no helper: it never runs unsupervised.
    const broken = new GroupSupervisor('/nonexistent/sh');
    expect(() => spawnSupervised('/bin/true', [], { supervisor: broken })).toThrow('cannot start the helper supervisor /nonexistent/sh');
    // Found on PATH, as spawn finds it.
    const ls = spawnSupervised('true', [], { env: { PATH: '/usr/bin:/bin' } });
    return new Promise((done) => ls.on('exit', (code) => done(expect(code).toBe(0))));
  });
});

describe('GroupSupervisor', () => {
  /** A sleeper leading a process group of its own, as a helper does; `marked` gives it the marker as fd 3. */
  function sleeper(supervisor: GroupSupervisor, marked = false) {
    const child = spawn('sleep', ['60'], {
      detached: true,
      stdio: ['ignore', 'ignore', 'ignore', marked ? supervisor.markerFd() : 'ignore'],
    });
    return child.pid as number;
  }

  it('kills, when it ends, the groups still registered, and never one forgotten', async () => {
    const supervisor = new GroupSupervisor();
    const kept = sleeper(supervisor);
    const forgotten = sleeper(supervisor);
    supervisor.register(kept);
    supervisor.register(forgotten);
    supervisor.forget(forgotten);
    try {
      await supervisor.close();
      await waitFor(() => !alive(kept), 'the registered group to be killed', 5000);
      expect([alive(kept), alive(forgotten)]).toEqual([false, true]);
    } finally {
      for (const pid of [kept, forgotten]) if (alive(pid)) process.kill(-pid, 'SIGKILL');
    }
  });

  it('kills, when it ends, a process holding its marker that was never registered, and only that one', async () => {
    const supervisor = new GroupSupervisor();
    supervisor.ensure();
    const marked = sleeper(supervisor, true);
    const other = sleeper(supervisor);
    try {
      await supervisor.close();
      await waitFor(() => !alive(marked), 'the marked process to be killed', 5000);
      expect([alive(marked), alive(other)]).toEqual([false, true]);
    } finally {
      for (const pid of [marked, other]) if (alive(pid)) process.kill(-pid, 'SIGKILL');
    }
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
