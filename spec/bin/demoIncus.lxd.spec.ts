import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CRASH_ON_SIGNAL, markedProcesses, processMarker } from '../helpers/leftovers';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// `rxfleet demo --incus` as a user runs it (as root, incus or lxd installed): a private Incus (or
// LXD) daemon, the enricher and the provisioner in one process, and nothing left behind afterwards,
// however it ends. Each run has its own TMPDIR (where the daemon's directory and the nats-server's
// are made) and an environment marker its children inherit. The processes of the daemon's
// instances are found by the directory they name (the demo's TMPDIR), since the daemon gives them
// a clean environment. The full run goes on both daemons; the three endings are shared out between
// them (each daemon's clean-up is the same code, streams/incus/privateDaemon.ts), which keeps CI's
// time down.

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
  it.each([
    { daemon: 'incus', flags: [], title: 'Incus', client: 'incus' },
    { daemon: 'lxd', flags: ['--incus-daemon', 'lxd'], title: 'LXD', client: 'lxc' },
  ])(
    'on $daemon: provisions the node of each instance it launches, every one found through its instance, and leaves nothing behind',
    async ({ flags, title, client }) => {
      // Without --incus-daemon it runs on Incus, which is installed here.
      const { demo, marker, tmp } = start(['--instances', '2', '--transport', 'nats', ...flags]);
      expect(await demo.exited).toEqual({ code: 0, signal: null });
      const stdout = demo.stdout();
      expect(stdout.split('\n')[0]).toBe(
        `rxfleet demo --incus: 2 ${title} instances on a private ${title} daemon, the enricher and the provisioner in one process (provision-incus), over a private nats-server (${/nats:\/\/127\.0\.0\.1:\d+/.exec(stdout)?.[0]})`,
      );
      expect(stdout).toMatch(new RegExp(`demo-incus-1\\.example\\.net: provisioned \\d+\\.\\d s after ${client} launch\n`));
      expect(stdout).toMatch(new RegExp(`demo-incus-2\\.example\\.net: provisioned \\d+\\.\\d s after ${client} launch\n`));
      expect(stdout).toMatch(/nodes provisioned: 2 of 2\n/);
      expect(stdout).toMatch(/found by: +Incus 2, discovery 0, startup events 0\n/);
      expect(stdout).toMatch(/errors: +0\n/);
      expect(stdout).toMatch(/duplicates: +0\n/);
      await expectNothingLeft(marker, tmp);
    },
  );

  it.each<{ ending: Ending; daemon: 'incus' | 'lxd' }>([
    { ending: 'SIGTERM', daemon: 'lxd' },
    { ending: 'SIGINT', daemon: 'incus' },
    { ending: 'crash', daemon: 'incus' },
  ])(
    'on $daemon, stopped by $ending with its instances running, leaves no daemon, instance, nats-server or directory behind',
    async ({ ending, daemon }) => {
      const { demo, marker, tmp } = start(['--instances', '6', '--transport', 'nats', '--incus-daemon', daemon], ending);
      await waitFor(() => /(incus|lxc) launch demo-incus-\d: running/.test(demo.stdout()), 'an instance to run', 180_000);
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
