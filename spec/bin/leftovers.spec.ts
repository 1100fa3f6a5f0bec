import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CRASH_ON_SIGNAL, markedProcesses, processMarker } from '../helpers/leftovers';
import { useNatsServer } from '../helpers/nats';
import { SCRIPTED_HELPER } from '../helpers/provisioner';
import { RxfleetProcess, killAll, startRxfleet } from '../helpers/rxfleetProcess';
import { waitFor } from '../helpers/waitFor';

// Every command that starts a process or makes a directory leaves neither behind, whether it is
// stopped by SIGTERM, by SIGINT (Ctrl-C), or crashes (an uncaught exception, thrown on SIGUSR2 by a
// preloaded fixture). Each command runs with its own TMPDIR, so the temporary directories it makes
// can be counted, and an environment marker its children inherit, so any process it started can be
// found among the machine's however it was re-parented.

jest.setTimeout(120_000);

type Ending = 'SIGTERM' | 'SIGINT' | 'crash';
const ENDINGS: Ending[] = ['SIGTERM', 'SIGINT', 'crash'];

let dir: string;
const running: RxfleetProcess[] = [];
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-leftovers-'))));
afterEach(async () => {
  await killAll(running.splice(0));
  rmSync(dir, { recursive: true, force: true });
});

/** Starts a command with its own TMPDIR and a marker; with `crash`, preloads the crash fixture. */
function start(args: string[], ending: Ending): { process: RxfleetProcess; marker: ReturnType<typeof processMarker>; tmp: string } {
  const tmp = join(dir, 'tmp');
  mkdirSync(tmp, { recursive: true });
  const marker = processMarker();
  const started = startRxfleet(args, {
    env: { ...process.env, TMPDIR: tmp, ...marker.env },
    nodeArgs: ending === 'crash' ? ['--require', CRASH_ON_SIGNAL] : [],
  });
  running.push(started);
  return { process: started, marker, tmp };
}

function end(target: RxfleetProcess, ending: Ending): void {
  target.child.kill(ending === 'crash' ? 'SIGUSR2' : ending);
}

/** Nothing the command started still runs, and its TMPDIR holds nothing. */
async function expectNothingLeft(marker: ReturnType<typeof processMarker>, tmp: string): Promise<void> {
  // A process killed on the way out may take a moment to be gone; it must go by itself.
  await waitFor(() => markedProcesses(marker).length === 0, 'every process it started to be gone', 10_000).catch(() => undefined);
  expect(markedProcesses(marker)).toEqual([]);
  expect(readdirSync(tmp)).toEqual([]);
}

describe('rxfleet demo leaves no nats-server, helper or directory behind', () => {
  // A helper process per node (several in flight at any moment), and the persistent helper's
  // long-running processes (the demo's default).
  const cases: Array<[Ending, 'per-node' | 'persistent', string]> = [
    ...ENDINGS.map((ending): [Ending, 'per-node', string] => [ending, 'per-node', 'minimal-helper']),
    ...ENDINGS.map((ending): [Ending, 'persistent', string] => [ending, 'persistent', 'persistent-helper']),
  ];
  it.each(cases)('on %s, with the %s helper', async (ending, helperMode, helper) => {
    const {
      process: demo,
      marker,
      tmp,
    } = start(
      ['demo', '--nodes', '3000', '--boot-time', '0', '--workers', '4', '--transport', 'nats', '--helper-mode', helperMode],
      ending,
    );
    await waitFor(() => demo.stdout().includes('rxfleet demo:'), 'the demo to run', 60_000);
    await waitFor(() => markedProcesses(marker).some((p) => p.includes(helper)), 'a helper to run', 60_000);
    expect(markedProcesses(marker).some((p) => p.includes('nats-server'))).toBe(true);
    expect(readdirSync(tmp).some((name) => name.startsWith('rxfleet-nats-'))).toBe(true);
    end(demo, ending);
    const exit = await demo.exited;
    expect(exit.code).toBe(1);
    if (ending === 'crash') expect(demo.stderr()).toContain('simulated crash');
    else expect(demo.stdout()).toMatch(/nodes provisioned: +\d+ of 3000 \(interrupted\)/);
    await expectNothingLeft(marker, tmp);
  });
});

describe('rxfleet simulate on its private nats-server leaves no server or directory behind', () => {
  it.each(ENDINGS)('on %s', async (ending) => {
    const { process: fleet, marker, tmp } = start(['simulate', '--nodes', '5', '--json', '--report-every', '0'], ending);
    const ready = await fleet.next((l) => l.type === 'ready');
    expect(ready.servers).toEqual([expect.stringMatching(/^nats:\/\/127\.0\.0\.1:\d+$/)]);
    expect(fleet.stderr()).toContain('started a private nats-server on');
    expect(markedProcesses(marker).some((p) => p.includes('nats-server'))).toBe(true);
    end(fleet, ending);
    const exit = await fleet.exited;
    expect(exit.code).toBe(ending === 'crash' ? 1 : 0);
    if (ending !== 'crash') expect(fleet.lines.at(-1)).toMatchObject({ type: 'summary', nodes: 5 });
    await expectNothingLeft(marker, tmp);
  });
});

describe('rxfleet provision leaves no helper or pid file behind', () => {
  const server = useNatsServer({ jetstream: false });

  it.each(ENDINGS)('on %s with helpers in flight', async (ending) => {
    const pid = join(dir, 'provisioner.pid');
    const config = join(dir, 'slow.yaml');
    writeFileSync(
      config,
      [
        `helper: ${SCRIPTED_HELPER} delay 60000`,
        'choria_insecure: true',
        `rxfleet: {nats_servers: ["${server().url}"], shutdown_grace: 1s, helper_timeout: 90s}`,
      ].join('\n'),
    );
    const choria = join(dir, 'choria.cfg');
    writeFileSync(choria, 'identity = leftovers.example.net\n');
    const { process: provisioner, marker, tmp } = start(['provision', '--config', config, '--choria-config', choria, '--pid', pid], ending);
    await waitFor(() => existsSync(pid), 'the pid file', 30_000);
    const fleet = startRxfleet([
      'simulate',
      '--nats',
      server().url,
      '--nodes',
      '2',
      '--name-prefix',
      `left-${ending}`,
      '--report-every',
      '0',
    ]);
    running.push(fleet);
    // The helpers; beside them runs the daemon's supervisor, which carries the marker but not their name.
    await waitFor(() => markedProcesses(marker).filter((p) => p.includes('scripted-helper')).length === 2, 'two helpers to run', 60_000);
    end(provisioner, ending);
    const exit = await provisioner.exited;
    // A signal: the grace period (1 s) ends with the helpers aborted, exit 0. A crash: exit 1.
    expect(exit.code).toBe(ending === 'crash' ? 1 : 0);
    expect(existsSync(pid)).toBe(false);
    await expectNothingLeft(marker, tmp);
  });
});

describe('rxfleet enrich starts no process and keeps only its data directory', () => {
  it.each(ENDINGS)('on %s', async (ending) => {
    const data = join(dir, 'data');
    // An Incus socket that is not there: the daemon runs and keeps trying it.
    const {
      process: enrich,
      marker,
      tmp,
    } = start(['enrich', '--incus', join(dir, 'no-incus.socket'), '--stdout', '--monitor', '127.0.0.1:0', '--data-dir', data], ending);
    await waitFor(() => enrich.stderr().includes('rxfleet enrich running'), 'the enricher to run', 30_000);
    end(enrich, ending);
    const exit = await enrich.exited;
    expect(exit.code).toBe(ending === 'crash' ? 1 : 0);
    // The cold store's directory is the user's, named by --data-dir: kept, by design.
    expect(existsSync(data)).toBe(true);
    await expectNothingLeft(marker, tmp);
  });
});
