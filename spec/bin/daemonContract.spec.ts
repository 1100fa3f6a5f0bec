import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NatsServerProcess, freePort, startNatsServer } from '../../streams/natsServerProcess';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RxfleetProcess, startRxfleet } from '../helpers/rxfleetProcess';
import { useTestDaemon } from '../helpers/testDaemon';
import { waitFor } from '../helpers/waitFor';

// One contract for every daemon command (bin/daemon/runDaemon.ts), point by point, against both
// daemons as users run them: the built `rxfleet provision` and `rxfleet enrich` (reading a private
// LXD daemon), each with a pid file, a monitor endpoint and a broker on a port chosen here, which
// the spec starts, freezes (SIGSTOP) or never starts, to put the daemon where each point needs it.

jest.setTimeout(120_000);
const WAIT = 60_000;

interface Setup {
  dir: string;
  natsPort: number;
  monitorPort: number;
  pid: string;
}

/** How each daemon is started against the broker port and monitor port of a setup. */
const DAEMONS: Record<'provision' | 'enrich', (s: Setup, socket: () => string) => string[]> = {
  provision: (s) => {
    const config = join(s.dir, 'provisioner.yaml');
    const choria = join(s.dir, 'choria.cfg');
    writeFileSync(
      config,
      [
        `helper: ${MINIMAL_HELPER}`,
        'token: tok-contract',
        'choria_insecure: true',
        `monitor_port: ${s.monitorPort}`,
        `rxfleet: {nats_servers: ["127.0.0.1:${s.natsPort}"], shutdown_grace: 10s}`,
      ].join('\n'),
    );
    writeFileSync(choria, 'identity = prov.example.net\n');
    return ['provision', '--config', config, '--choria-config', choria, '--pid', s.pid];
  },
  enrich: (s, socket) => [
    'enrich',
    '--incus',
    socket(),
    '--nats',
    `nats://127.0.0.1:${s.natsPort}`,
    '--monitor',
    `127.0.0.1:${s.monitorPort}`,
    '--data-dir',
    join(s.dir, 'data'),
    '--pid',
    s.pid,
  ],
};

const readyStatus = async (port: number): Promise<number | undefined> =>
  fetch(`http://127.0.0.1:${port}/ready`).then(
    (r) => r.status,
    () => undefined,
  );
const said = (p: RxfleetProcess, msg: string): boolean => p.lines.some((l) => l.msg === msg);
// One LXD daemon for the whole file: only the enricher reads it.
const lxd = useTestDaemon('lxd');

describe.each(Object.keys(DAEMONS) as Array<keyof typeof DAEMONS>)('rxfleet %s keeps the daemon contract', (command) => {
  let setup: Setup;
  let daemon: RxfleetProcess | undefined;
  let nats: NatsServerProcess | undefined;

  beforeEach(async () => {
    const dir = mkdtempSync(join(tmpdir(), `rxfleet-contract-${command}-`));
    setup = { dir, natsPort: await freePort(), monitorPort: await freePort(), pid: join(dir, `${command}.pid`) };
  });
  afterEach(async () => {
    if (nats !== undefined) process.kill(nats.pid, 'SIGCONT');
    if (daemon?.running()) daemon.child.kill('SIGKILL');
    await daemon?.exited;
    await nats?.stop();
    daemon = undefined;
    nats = undefined;
    rmSync(setup.dir, { recursive: true, force: true });
  });
  const start = (): RxfleetProcess => (daemon = startRxfleet(DAEMONS[command](setup, () => lxd().socket)));

  it('writes its pid file before it connects, is not ready (503) until the broker answers and ready (200) once it does; SIGTERM: stops, removes the pid file, exit 0', async () => {
    const running = start();
    // Written with its content in one write; the file may be seen empty for the moment between.
    await waitFor(() => existsSync(setup.pid) && readFileSync(setup.pid, 'utf8') !== '', 'the pid file', WAIT);
    expect(readFileSync(setup.pid, 'utf8')).toBe(`${running.child.pid}\n`);
    await waitFor(async () => (await readyStatus(setup.monitorPort)) === 503, '/ready 503 while the broker is away', WAIT);
    nats = await startNatsServer({ port: setup.natsPort });
    await waitFor(async () => (await readyStatus(setup.monitorPort)) === 200, '/ready 200 once connected', WAIT);
    running.child.kill('SIGTERM');
    expect((await running.exited).code).toBe(0);
    expect(existsSync(setup.pid)).toBe(false);
    expect(said(running, 'SIGTERM: stopping (send it again to exit at once)')).toBe(true);
  });

  it('a stop while it still connects ends it cleanly: exit 0, the pid file removed', async () => {
    const running = start();
    await waitFor(() => existsSync(setup.pid), 'the pid file', WAIT);
    await waitFor(() => running.lines.some((l) => String(l.msg).startsWith('cannot connect to NATS')), 'a failed connection attempt', WAIT);
    running.child.kill('SIGINT');
    expect((await running.exited).code).toBe(0);
    expect(existsSync(setup.pid)).toBe(false);
  });

  it('a second signal while the stop waits (its broker frozen mid-drain) exits 1 at once, the pid file removed', async () => {
    nats = await startNatsServer({ port: setup.natsPort });
    const running = start();
    await waitFor(async () => (await readyStatus(setup.monitorPort)) === 200, '/ready 200', WAIT);
    process.kill(nats.pid, 'SIGSTOP');
    running.child.kill('SIGTERM');
    await waitFor(() => said(running, 'SIGTERM: stopping (send it again to exit at once)'), 'the first signal heard', WAIT);
    running.child.kill('SIGTERM');
    expect((await running.exited).code).toBe(1);
    expect(said(running, 'second signal: exiting at once')).toBe(true);
    expect(existsSync(setup.pid)).toBe(false);
  });

  it('a pid file it cannot write is a configuration error: nothing starts, one line names it, exit 1', async () => {
    setup.pid = join(setup.dir, 'missing', `${command}.pid`);
    const running = start();
    expect((await running.exited).code).toBe(1);
    const lines = running.stderr().trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^error: ${setup.pid}: --pid: cannot write the pid file: `));
    expect(lines.at(-1)).toBe(`rxfleet ${command}: not started: 1 configuration error`);
    expect(running.lines.filter((l) => l.level !== undefined && Number(l.level) >= 30 && String(l.msg).includes('connect'))).toEqual([]);
  });
});
