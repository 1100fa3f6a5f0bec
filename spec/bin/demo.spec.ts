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

  it('runs the persistent sample helper by default, and a helper per node with --helper-mode per-node', async () => {
    const persistent = await demo(['--nodes', '10', '--boot-time', '0', '--transport', 'memory']);
    expect(persistent.stdout.split('\n')[0]).toContain(', persistent helpers, ');
    const perNode = await demo(['--nodes', '10', '--boot-time', '0', '--transport', 'memory', '--helper-mode', 'per-node']);
    expect(perNode.code).toBe(0);
    expect(perNode.stdout.split('\n')[0]).toContain(', a helper per node, ');
    expectCompleteSummary(perNode.stdout, 10);
  });

  it.each(['nats', 'memory'])(
    '--active-active over %s: the two provisioners share the fleet through claims, each node provisioned once',
    async (transport) => {
      const { code, stdout } = await demo(['--nodes', '60', '--boot-time', '1s', '--transport', transport, '--active-active']);
      expect(code).toBe(0);
      expect(stdout.split('\n')[0]).toContain('2 provisioners sharing the fleet (active-active)');
      expect(stdout).toMatch(/nodes provisioned: +60 of 60\n/);
      expect(stdout).toMatch(/errors: +0\n/);
      expect(stdout).toMatch(/duplicates: +0\n/);
      const by = /provisioned by: +demo-provisioner-a\.example\.net (\d+), demo-provisioner-b\.example\.net (\d+)\n/.exec(stdout);
      expect(Number(by?.[1]) + Number(by?.[2])).toBe(60);
      expect(stdout).not.toMatch(/leader:/);
    },
  );

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
      expect(stdout.split('\n')[0]).toBe(
        'nats-server is not on PATH (install it with `apt-get install nats-server`): running on an in-process transport instead',
      );
      expectCompleteSummary(stdout, 20);
    });

    it('--incus without incus or lxd on PATH says why in one line on stderr (Incus first), starts nothing and exits 1', async () => {
      const { code, stdout, stderr } = await demo(['--incus'], { ...process.env, PATH: dir });
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toMatch(
        /^rxfleet demo --incus: cannot run: a private Incus daemon needs (\/usr\/libexec\/incus\/incusd|incus) \(apt-get install iptables dnsmasq-base busybox-static, and incus-base incus-client \(on Debian 12 from bookworm-backports\)\); rxfleet demo without --incus needs neither\n$/,
      );
    });

    it('--incus --incus-daemon lxd without lxd names what LXD needs', async () => {
      const { code, stderr } = await demo(['--incus', '--incus-daemon', 'lxd'], { ...process.env, PATH: dir });
      expect(code).toBe(1);
      expect(stderr).toBe(
        'rxfleet demo --incus: cannot run: a private LXD daemon needs lxd (apt-get install lxd iptables dnsmasq-base busybox-static); rxfleet demo without --incus needs neither\n',
      );
    });
  });
});
