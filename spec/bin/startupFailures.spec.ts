import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { AddressInfo, Server, Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MINIMAL_HELPER } from '../helpers/provisioner';
import { RXFLEET_BIN } from '../helpers/rxfleetProcess';
import { freePort } from '../../streams/natsServerProcess';

// What provision opens before it connects (its pid file, its log file, its monitor port) is part
// of its configuration: each one that cannot be used is one line naming its key, exit 1, before
// any connection, and validate says the same. Run as root and as an unprivileged user (nobody),
// whose failures differ (permissions, privileged ports).

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built command, as root or through `setpriv` as nobody. */
function rxfleet(asNobody: boolean, args: string[]): Promise<Outcome> {
  const command = asNobody ? 'setpriv' : process.execPath;
  const argv = asNobody
    ? ['--reuid', 'nobody', '--regid', 'nogroup', '--clear-groups', process.execPath, RXFLEET_BIN, ...args]
    : [RXFLEET_BIN, ...args];
  return new Promise((resolve) => {
    execFile(command, argv, { timeout: 30_000, env: { ...process.env, HOME: dir } }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : Number((error as { code?: number }).code ?? 1), stdout, stderr }),
    );
  });
}

let dir: string;
/** A TCP server standing in for the broker: it only counts who connects. */
let broker: Server;
const connections: Socket[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rxfleet-startup-'));
  chmodSync(dir, 0o755);
  broker = createServer((socket) => {
    connections.push(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => broker.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise<void>((resolve) => broker.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

const write = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, 0o644);
  return path;
};
const files = (name: string, yaml: string[]): { config: string; choria: string } => ({
  config: write(`${name}.yaml`, [`helper: ${MINIMAL_HELPER}`, 'choria_insecure: true', ...yaml].join('\n')),
  choria: write(
    `${name}.cfg`,
    ['identity = prov.example.net', `plugin.choria.middleware_hosts = 127.0.0.1:${(broker.address() as AddressInfo).port}`].join('\n'),
  ),
});

/** Both commands on the same files: validate and provision each print one error line naming the key, exit 1, and nothing connects. */
async function expectRefusedByBoth(asNobody: boolean, f: { config: string; choria: string }, extra: string[], line: RegExp): Promise<void> {
  const before = connections.length;
  const validate = await rxfleet(asNobody, ['validate', '--config', f.config, '--choria-config', f.choria, ...extra]);
  expect(validate.code).toBe(1);
  expect(validate.stdout.split('\n').filter((l) => l.startsWith('error: '))).toEqual([expect.stringMatching(line)]);
  const provision = await rxfleet(asNobody, ['provision', '--config', f.config, '--choria-config', f.choria, ...extra]);
  expect(provision.code).toBe(1);
  const errors = provision.stderr.split('\n').filter((l) => l.startsWith('error: '));
  expect(errors).toEqual([expect.stringMatching(line)]);
  // The same line in both, and provision said nothing else but that it did not start.
  expect(errors).toEqual(validate.stdout.split('\n').filter((l) => l.startsWith('error: ')));
  expect(provision.stderr.trim().split('\n').at(-1)).toBe('rxfleet provision: not started: 1 configuration error');
  expect(provision.stdout).not.toContain('connecting to NATS');
  expect(connections.length).toBe(before);
}

describe.each([
  ['as root', false],
  ['as nobody', true],
])('start-up failures are configuration errors (%s)', (_name, asNobody) => {
  const tag = asNobody ? 'nobody' : 'root';

  it('a pid file that cannot be written', async () => {
    // Root may write anywhere it can name, so the file's directory does not exist; nobody may not write in a root-owned directory.
    const locked = join(dir, `locked-${tag}`);
    mkdirSync(locked, { recursive: true, mode: 0o755 });
    const pid = asNobody ? join(locked, 'rxfleet.pid') : join(dir, 'missing', 'rxfleet.pid');
    const f = files(`pid-${tag}`, []);
    await expectRefusedByBoth(asNobody, f, ['--pid', pid], new RegExp(`^error: ${pid}: --pid: cannot write the pid file: `));
    expect(existsSync(pid)).toBe(false);
  });

  it('a log file that cannot be written', async () => {
    const blocker = write(`plain-${tag}`, 'a file, not a directory');
    const logfile = asNobody ? join(dir, `locked-${tag}`, 'rxfleet.log') : join(blocker, 'rxfleet.log');
    mkdirSync(join(dir, `locked-${tag}`), { recursive: true, mode: 0o755 });
    const f = files(`log-${tag}`, [`logfile: ${logfile}`]);
    await expectRefusedByBoth(asNobody, f, [], new RegExp(`^error: ${f.config}: logfile: cannot write ${logfile}: `));
  });

  it('a monitor port another process holds, or (as nobody) a privileged port', async () => {
    const holder = createServer();
    const busy = await freePort();
    await new Promise<void>((resolve) => holder.listen(busy, resolve));
    try {
      const f = files(`port-${tag}`, [`monitor_port: ${busy}`]);
      await expectRefusedByBoth(
        asNobody,
        f,
        [],
        new RegExp(`^error: ${f.config}: monitor_port: port ${busy} is in use by another process \\(EADDRINUSE\\)$`),
      );
      const flag = files(`flag-${tag}`, []);
      await expectRefusedByBoth(asNobody, flag, ['--monitor', String(busy)], /^error: --monitor: port \d+ is in use by another process/);
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
    if (asNobody) {
      const f = files(`low-${tag}`, ['monitor_port: 81']);
      await expectRefusedByBoth(
        asNobody,
        f,
        [],
        new RegExp(`^error: ${f.config}: monitor_port: port 81 cannot be listened on by this user \\(EACCES`),
      );
    }
  });
});

describe('what can be used is used, and the pid file comes first', () => {
  it('validate passes a writable pid file and log file and a free port, and leaves no file behind', async () => {
    const port = await freePort();
    const logfile = join(dir, 'ok', 'logs', 'rxfleet.log');
    const f = files('ok', [`logfile: ${logfile}`, `monitor_port: ${port}`]);
    const pid = join(dir, 'ok.pid');
    const outcome = await rxfleet(false, ['validate', '--config', f.config, '--choria-config', f.choria, '--pid', pid]);
    expect(outcome.code).toBe(0);
    expect(existsSync(pid)).toBe(false);
    expect(existsSync(logfile)).toBe(false);
  });

  it('provision writes the pid file before its first connection', async () => {
    // A broker that never answers: the daemon is still connecting, and its pid file is there.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const pid = join(dir, 'early.pid');
    const config = write('early.yaml', [`helper: ${MINIMAL_HELPER}`, 'choria_insecure: true'].join('\n'));
    const choria = write(
      'early.cfg',
      ['identity = prov.example.net', `plugin.choria.middleware_hosts = 127.0.0.1:${(silent.address() as AddressInfo).port}`].join('\n'),
    );
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [RXFLEET_BIN, 'provision', '--config', config, '--choria-config', choria, '--pid', pid], {
      env: { ...process.env, HOME: dir },
      stdio: 'ignore',
    });
    try {
      const deadline = Date.now() + 15_000;
      while (!existsSync(pid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(readFileSync(pid, 'utf8')).toBe(`${child.pid}\n`);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
    expect(existsSync(pid)).toBe(false);
  });
});
