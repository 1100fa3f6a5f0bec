import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RXFLEET_BIN } from '../helpers/rxfleetProcess';
import { promisify } from 'node:util';

// The built command, as a user runs it (`npm test` builds first).
const bin = RXFLEET_BIN;
const run = promisify(execFile);

async function demo(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, 'demo', ...args], { timeout: 120_000, env });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      done(false);
    });
    socket.once('error', () => done(true));
  });
}

/** Checks the summary: every node provisioned once, no errors, a rate, one leader and one standby. */
function expectCompleteSummary(stdout: string, nodes: number): void {
  expect(stdout).toMatch(new RegExp(`nodes provisioned: +${nodes} of ${nodes}\\n`));
  expect(stdout).toMatch(/errors: +0\n/);
  expect(stdout).toMatch(/duplicates: +0\n/);
  expect(stdout).toMatch(/nodes\/s: +\d+\.\d\n/);
  expect(stdout).toMatch(/leader: +demo-provisioner-[ab]\.example\.net \(demo-provisioner-[ab]\.example\.net stood by\)/);
  // A pipe gets no progress bar.
  expect(stdout).not.toContain('\r');
}

describe('rxfleet demo', () => {
  it('over a private nats-server: provisions every node, prints the summary, exits 0 and stops the server', async () => {
    const { code, stdout } = await demo(['--nodes', '40', '--boot-time', '1s', '--transport', 'nats']);
    expect(code).toBe(0);
    expectCompleteSummary(stdout, 40);
    const port = Number(/nats:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]);
    expect(port).toBeGreaterThan(0);
    expect(await refusesConnections(port)).toBe(true);
  });

  it('over the in-process transport when asked', async () => {
    const { code, stdout } = await demo(['--nodes', '30', '--boot-time', '1s', '--transport', 'memory']);
    expect(code).toBe(0);
    expect(stdout).toContain('over the in-process transport');
    expectCompleteSummary(stdout, 30);
  });

  describe('without nats-server on PATH', () => {
    let dir: string;
    beforeAll(() => {
      // A PATH with node (the sample helper's #!/usr/bin/env node needs it) and no nats-server.
      dir = mkdtempSync(join(tmpdir(), 'rxfleet-path-'));
      symlinkSync(process.execPath, join(dir, 'node'));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('says how to install it in one line and falls back to the in-process transport', async () => {
      const { code, stdout } = await demo(['--nodes', '20', '--boot-time', '0'], { ...process.env, PATH: dir });
      expect(code).toBe(0);
      expect(stdout.split('\n')[0]).toBe('nats-server is not on PATH (install it with `apt-get install nats-server`): running on an in-process transport instead');
      expectCompleteSummary(stdout, 20);
    });
  });
});
