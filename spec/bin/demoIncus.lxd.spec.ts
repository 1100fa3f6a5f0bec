import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CRASH_ON_SIGNAL, markedProcesses, processMarker } from '../helpers/leftovers';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// `rxfleet demo --incus` as a user runs it (as root, lxd installed): a private LXD daemon, the
// enricher and the provisioner in one process, and nothing left behind afterwards, however it
// ends. Each run has its own TMPDIR (where the LXD daemon's directory and the nats-server's are
// made) and an environment marker its children inherit. The processes of the LXD daemon's
// instances are found by the directory they name (the demo's TMPDIR), since LXD gives them a
// clean environment.

jest.setTimeout(240_000);

type Ending = 'SIGTERM' | 'SIGINT' | 'crash';

let dir: string;
const running: RxfleetProcess[] = [];
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'rxfleet-demo-incus-'));
  // The LXD daemon's directory is made in it, and unprivileged containers must reach their rootfs.
  chmodSync(dir, 0o755);
});
afterEach(async () => {
  await killAll(running.splice(0));
  rmSync(dir, { recursive: true, force: true });
});

function start(args: string[], ending?: Ending): { demo: RxfleetProcess; marker: ReturnType<typeof processMarker>; tmp: string } {
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp, { recursive: true });
  const marker = processMarker();
  const demo = startRxfleet(['demo', '--incus', ...args], {
    env: { ...process.env, TMPDIR: tmp, ...marker.env },
    nodeArgs: ending === 'crash' ? ['--require', CRASH_ON_SIGNAL] : [],
  });
  running.push(demo);
  return { demo, marker, tmp };
}

/** Processes whose command line names the demo's TMPDIR (the LXD daemon's, its instances' monitors), by /proc. */
function processesNaming(tmp: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(tmp)) found.push(`${entry}: ${cmd}`);
    } catch {
      // it exited while we looked
    }
  }
  return found;
}

async function expectNothingLeft(marker: ReturnType<typeof processMarker>, tmp: string): Promise<void> {
  await waitFor(
    () => markedProcesses(marker).length === 0 && processesNaming(tmp).length === 0,
    'every process it started to be gone',
    15_000,
  ).catch(() => undefined);
  expect(markedProcesses(marker)).toEqual([]);
  expect(processesNaming(tmp)).toEqual([]);
  expect(
    readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter((line) => line.includes(tmp)),
  ).toEqual([]);
  expect(readdirSync(tmp)).toEqual([]);
}

describe('rxfleet demo --incus', () => {
  it('provisions the node of each instance it launches, every one found through its instance, and leaves nothing behind', async () => {
    const { demo, marker, tmp } = start(['--instances', '2', '--transport', 'nats']);
    expect(await demo.exited).toEqual({ code: 0, signal: null });
    const stdout = demo.stdout();
    expect(stdout.split('\n')[0]).toMatch(
      /^rxfleet demo --incus: 2 LXD instances on a private LXD daemon, the enricher and the provisioner in one process \(provision-incus\), over a private nats-server \(nats:\/\/127\.0\.0\.1:\d+\)$/,
    );
    expect(stdout).toMatch(/demo-incus-1\.example\.net: provisioned \d+\.\d s after lxc launch\n/);
    expect(stdout).toMatch(/demo-incus-2\.example\.net: provisioned \d+\.\d s after lxc launch\n/);
    expect(stdout).toMatch(/nodes provisioned: 2 of 2\n/);
    expect(stdout).toMatch(/found by: +Incus 2, discovery 0, startup events 0\n/);
    expect(stdout).toMatch(/errors: +0\n/);
    expect(stdout).toMatch(/duplicates: +0\n/);
    await expectNothingLeft(marker, tmp);
  });

  it.each<Ending>(['SIGTERM', 'SIGINT', 'crash'])(
    'stopped by %s with its instances running, leaves no LXD daemon, instance, nats-server or directory behind',
    async (ending) => {
      const { demo, marker, tmp } = start(['--instances', '6', '--transport', 'nats'], ending);
      await waitFor(() => /lxc launch demo-incus-\d: running/.test(demo.stdout()), 'an instance to run', 180_000);
      expect(processesNaming(tmp).some((p) => p.includes('[lxc monitor]'))).toBe(true);
      demo.child.kill(ending === 'crash' ? 'SIGUSR2' : ending);
      const exit = await demo.exited;
      expect(exit.code).toBe(1);
      if (ending === 'crash') expect(demo.stderr()).toContain('simulated crash');
      else expect(demo.stdout()).toMatch(/nodes provisioned: +\d of 6 \(interrupted\)/);
      await expectNothingLeft(marker, tmp);
    },
  );
});
