import { ChildProcess, execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { markedProcesses, processMarker } from '../helpers/leftovers';
import { useNatsServer } from '../helpers/nats';
import { createTestCa } from '../helpers/testCa';
import { debianPackage } from '../../scripts/package/deb';

// The Debian package as a host gets it: built by `npm run package` in a clean clone of this
// repository (what is committed, with what `npm ci` installs), installed with dpkg on this
// Debian 12 machine, run with every Node on the machine hidden, removed and purged. One build for
// the whole file; the tests run in order, as an operator would.
const root = resolve(__dirname, '../..');
const execFileAsync = promisify(execFile);
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
const marker = processMarker();

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** An environment as a shell would give it: npm's own variables (set when jest runs under npm) left out. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  return { ...env, ...marker.env, ...extra };
}

async function run(
  file: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {},
): Promise<Outcome> {
  try {
    const { stdout, stderr } = await execFileAsync(file, args, {
      cwd: options.cwd ?? scratch,
      env: options.env ?? cleanEnv(),
      timeout: options.timeout ?? 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number | string; stdout?: string; stderr?: string; message: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? e.message };
  }
}

/** Runs and expects exit status 0, with the output in the failure message. */
async function ok(file: string, args: string[], options: Parameters<typeof run>[2] = {}): Promise<Outcome> {
  const outcome = await run(file, args, options);
  expect(`${file} ${args.join(' ')}: exit ${outcome.code}\n${outcome.stderr}`).toBe(`${file} ${args.join(' ')}: exit 0\n${outcome.stderr}`);
  return outcome;
}

/** `/usr/bin/rxfleet ...args` running, with its stdout's JSON lines gathered. */
function startInstalled(args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn('/usr/bin/rxfleet', args, { cwd: scratch, env, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  const lines: Record<string, unknown>[] = [];
  const waiters: { match: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] = [];
  let ended = false;
  child.stderr.resume();
  createInterface({ input: child.stdout }).on('line', (text) => {
    try {
      const line = JSON.parse(text) as Record<string, unknown>;
      lines.push(line);
      for (const w of waiters.filter((w) => w.match(line))) w.resolve(line);
    } catch {
      // Not a JSON line.
    }
  });
  const exited = new Promise<number | null>((done) => child.on('close', (code) => ((ended = true), done(code))));
  return {
    child,
    lines,
    exited,
    running: () => !ended,
    next: (match: (l: Record<string, unknown>) => boolean) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const found = lines.find(match);
        if (found !== undefined) resolve(found);
        else waiters.push({ match, resolve });
      }),
  };
}

const installed = async () => (await run('dpkg-query', ['-W', '-f=${db:Status-Status}', 'rxfleet'])).stdout;

const started: ChildProcess[] = [];
let scratch: string;
let clone: string;
let deb: string;

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'rxfleet-package-deb-'));
  // A machine with rxfleet already installed would be changed by this spec: refuse instead.
  if ((await installed()) !== '') throw new Error('rxfleet is already installed on this machine: this spec installs and purges it');
  clone = join(scratch, 'clone');
  await ok('git', ['clone', '--quiet', '--no-hardlinks', root, clone]);
  await ok('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: clone, timeout: 600_000 });
  await ok('npm', ['run', 'package'], { cwd: clone, timeout: 600_000 });
  deb = join(clone, 'build', 'package', `rxfleet_${version}_amd64.deb`);
}, 1_200_000);

afterAll(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if ((await installed()) !== '') await run('dpkg', ['--purge', 'rxfleet']);
  rmSync(scratch, { recursive: true, force: true });
}, 120_000);

describe(`rxfleet_${version}_amd64.deb`, () => {
  const server = useNatsServer({ jetstream: false });

  it('is built from the clean clone, with the fields and files a host relies on', async () => {
    expect(statSync(deb).size).toBeGreaterThan(10_000_000);
    const field = async (name: string) => (await ok('dpkg-deb', ['--field', deb, name])).stdout.trim();
    expect(await field('Package')).toBe('rxfleet');
    expect(await field('Version')).toBe(version);
    expect(await field('Architecture')).toBe('amd64');
    expect(await field('Recommends')).toBe('nats-server');
    expect(await field('Suggests')).toBe('incus | lxd');
    // Node is inside the binary: nothing on the host provides it.
    expect(await field('Depends')).not.toMatch(/node/);
    const files = (await ok('dpkg-deb', ['--contents', deb])).stdout;
    for (const path of [
      './usr/bin/rxfleet',
      './lib/systemd/system/rxfleet-provision.service',
      './lib/systemd/system/rxfleet-enrich.service',
      './etc/rxfleet/provisioner.yaml',
      './etc/rxfleet/choria.cfg',
      './etc/rxfleet/enricher.yaml',
      './etc/logrotate.d/rxfleet',
      './usr/share/man/man1/rxfleet.1.gz',
    ])
      expect(files).toContain(path);
    expect(files).not.toMatch(/node_modules/);
    const control = join(scratch, 'control');
    await ok('dpkg-deb', ['--control', deb, control]);
    expect(readFileSync(join(control, 'conffiles'), 'utf8').trim().split('\n').sort()).toEqual([
      '/etc/logrotate.d/rxfleet',
      '/etc/rxfleet/choria.cfg',
      '/etc/rxfleet/enricher.yaml',
      '/etc/rxfleet/provisioner.yaml',
    ]);
  }, 120_000);

  it('lintian reports no error and no warning (the two overrides are explained in the package)', async () => {
    const { stdout, stderr } = await run('lintian', ['--no-tag-display-limit', deb], { timeout: 300_000 });
    const tags = `${stdout}${stderr}`.split('\n').filter((l) => /^[EW]: /.test(l));
    expect(tags).toEqual([]);
    const overrides = readFileSync(join(root, 'scripts/package/debian/lintian-overrides'), 'utf8');
    expect(overrides).toMatch(/^# .*single executable/m);
  }, 300_000);

  it('installs with dpkg -i: /usr/bin/rxfleet runs, the rxfleet user exists, the units are installed, not enabled, and verify', async () => {
    await ok('dpkg', ['--install', deb]);
    expect(await installed()).toBe('installed');
    expect((await ok('/usr/bin/rxfleet', ['--version'])).stdout.trim()).toBe(version);
    // The binary keeps a code cache of the command's run (bin/compileCache.ts), and the next run
    // uses it rather than writing it again.
    const cache = join(scratch, 'compile-cache');
    const versionRun = async () =>
      (await ok('/usr/bin/rxfleet', ['--version'], { env: cleanEnv({ RXFLEET_COMPILE_CACHE: cache }) })).stdout.trim();
    expect(await versionRun()).toBe(version);
    expect(readdirSync(cache)).toHaveLength(1);
    const cached = join(cache, readdirSync(cache)[0]);
    expect(readFileSync(cached, 'latin1').split('\n')[0]).toMatch(
      new RegExp(`^rxfleet-compile-cache [0-9a-f]{16} ${process.version.replace(/\./g, '\\.')} x64 ok$`),
    );
    const written = statSync(cached).mtimeMs;
    expect(await versionRun()).toBe(version);
    expect(statSync(cached).mtimeMs).toBe(written);
    // `status` runs from the binary's bundle of the reads alone: its cache is another bundle's.
    const refused = await run('/usr/bin/rxfleet', ['status', '--nats', 'nats://127.0.0.1:1'], {
      env: cleanEnv({ RXFLEET_COMPILE_CACHE: cache }),
    });
    expect([refused.code, refused.stderr.trim()]).toEqual([1, 'rxfleet status: connection refused']);
    expect(new Set(readdirSync(cache).map((name) => name.slice(0, 8))).size).toBe(2);
    const user = (await ok('getent', ['passwd', 'rxfleet'])).stdout.trim().split(':');
    expect([user[0], user[5], user[6]]).toEqual(['rxfleet', '/var/lib/rxfleet-provision', '/usr/sbin/nologin']);
    expect(Number(user[2])).toBeLessThan(1000);
    for (const wants of ['/etc/systemd/system/multi-user.target.wants', '/etc/systemd/system']) {
      const links = existsSync(wants) ? readdirSync(wants) : [];
      expect(links.filter((name) => name.startsWith('rxfleet'))).toEqual([]);
    }
    const units = ['/lib/systemd/system/rxfleet-provision.service', '/lib/systemd/system/rxfleet-enrich.service'];
    const verify = await run('systemd-analyze', ['verify', ...units]);
    expect(verify).toEqual({ code: 0, stdout: '', stderr: '' });
    for (const unit of units) expect(readFileSync(unit, 'utf8')).toMatch(/^ExecStart=\/usr\/bin\/rxfleet /m);
  }, 120_000);

  it("validate on the shipped examples, as the rxfleet user: only the site's own files are missing, and with them it passes", async () => {
    const asUser = (args: string[]) => run('runuser', ['-u', 'rxfleet', '--', '/usr/bin/rxfleet', 'validate', ...args], { cwd: '/' });
    const shipped = await asUser(['--config', '/etc/rxfleet/provisioner.yaml', '--choria-config', '/etc/rxfleet/choria.cfg']);
    expect(shipped.code).toBe(1);
    const lines = shipped.stdout.split('\n');
    const errors = lines.filter((l) => l.startsWith('error: '));
    expect(errors.map((l) => /file "([^"]+)" does not exist/.exec(l)?.[1])).toEqual([
      '/etc/choria-provisioner/ssl/provisioner.pem',
      '/etc/choria-provisioner/ssl/provisioner.key',
      '/etc/choria-provisioner/ssl/ca.pem',
    ]);
    expect(lines.filter((l) => l.startsWith('warning: '))).toEqual([
      'warning: /etc/rxfleet/provisioner.yaml: helper: /etc/choria-provisioner/helper.rb does not exist: every node will fail until it can be run',
    ]);
    // The same files with a site's certificates and helper where they name them.
    const site = join(scratch, 'site');
    mkdirSync(join(site, 'ssl'), { recursive: true });
    const ca = await createTestCa();
    const leaf = await ca.issue('provisioner.example.net');
    writeFileSync(join(site, 'ssl/ca.pem'), ca.cert);
    writeFileSync(join(site, 'ssl/provisioner.pem'), leaf.cert);
    writeFileSync(join(site, 'ssl/provisioner.key'), leaf.key);
    writeFileSync(join(site, 'helper.rb'), '#!/bin/sh\nexit 0\n');
    chmodSync(join(site, 'helper.rb'), 0o755);
    for (const name of ['provisioner.yaml', 'choria.cfg'])
      writeFileSync(join(site, name), readFileSync(join('/etc/rxfleet', name), 'utf8').replaceAll('/etc/choria-provisioner/', `${site}/`));
    chmodSync(scratch, 0o755);
    await ok('chmod', ['-R', 'go+rX', site]);
    const filled = await asUser(['--config', join(site, 'provisioner.yaml'), '--choria-config', join(site, 'choria.cfg')]);
    expect(`${filled.code} ${filled.stdout}${filled.stderr}`).toBe(`0 ${filled.stdout}${filled.stderr}`);
    expect(filled.stdout).toMatch(new RegExp(`^${site}/provisioner\\.yaml: OK: `, 'm'));
  }, 120_000);

  it("pino's pretty output works in the binary (pino-pretty as a stream in the same thread, no worker transport)", async () => {
    // A provisioner that cannot reach its broker logs its start and its failed attempts; SIGTERM after 3 s.
    const config = join(scratch, 'pretty.yaml');
    writeFileSync(config, 'helper: /bin/true\nchoria_insecure: true\n');
    const { stdout } = await run(
      'timeout',
      ['-s', 'TERM', '3', '/usr/bin/rxfleet', 'provision', '--config', config, '--nats', 'nats://127.0.0.1:1', '--pretty'],
      {
        env: cleanEnv({ HOME: scratch }),
      },
    );
    expect(stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(rxfleet-provision\): Choria Provisioner starting/m);
    expect(stdout).not.toMatch(/^\{"level"/m);
  }, 120_000);

  it('rxfleet demo runs from the installed binary with every node on the machine hidden, and leaves nothing behind', async () => {
    // Every `node` on PATH (and /usr/bin/node) is covered by an empty, non-executable file in a
    // mount namespace of the demo's own: if the binary or a helper it runs needed one, it would fail.
    const nodes = new Set(['/usr/bin/node']);
    for (const dir of (process.env.PATH ?? '').split(delimiter))
      if (dir !== '' && existsSync(join(dir, 'node'))) nodes.add(join(dir, 'node'));
    const blank = join(scratch, 'no-node');
    writeFileSync(blank, '');
    const tmp = join(scratch, 'demo-tmp');
    mkdirSync(tmp);
    const hide = [...nodes].map((n) => `mount --bind ${blank} ${n}`).join(' && ');
    const script = `${hide} && if node --version 2>/dev/null; then echo "node still runs" >&2; exit 99; fi && rxfleet demo --nodes 200 && rxfleet demo --nodes 20 --helper-mode per-node`;
    const demo = await run('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], {
      env: cleanEnv({ TMPDIR: tmp, PATH: `/usr/bin:${process.env.PATH ?? ''}` }),
      timeout: 180_000,
    });
    expect(`${demo.code} ${demo.stderr}`).toBe(`0 ${demo.stderr}`);
    expect(demo.stdout).toMatch(/persistent helpers, over a private nats-server/);
    expect(demo.stdout).toMatch(/nodes provisioned: 200 of 200/);
    expect(demo.stdout).toMatch(/a helper per node/);
    expect(demo.stdout).toMatch(/nodes provisioned: 20 of 20/);
    expect(demo.stdout.match(/^errors:\s+(\d+)$/gm)).toEqual(['errors:            0', 'errors:            0']);
    // Nothing on stderr from Node about the single executable (a require it cannot serve, say).
    expect(demo.stderr).not.toMatch(/Warning/);
    // The helpers extracted from the binary, and the private nats-server's store, are gone.
    expect(readdirSync(tmp)).toEqual([]);
    expect(markedProcesses(marker)).toEqual([]);
  }, 240_000);

  it('rxfleet demo --incus from the installed binary: the LXD image script comes out of the binary, and goes', async () => {
    const tmp = join(scratch, 'incus-tmp');
    mkdirSync(tmp);
    const demo = await run('/usr/bin/rxfleet', ['demo', '--incus', '--instances', '1'], {
      env: cleanEnv({ TMPDIR: tmp }),
      timeout: 280_000,
    });
    expect(`${demo.code} ${demo.stderr}`).toBe(`0 ${demo.stderr}`);
    expect(demo.stdout).toMatch(/nodes provisioned: 1 of 1/);
    expect(demo.stderr).not.toMatch(/Warning/);
    expect(readdirSync(tmp)).toEqual([]);
    expect(markedProcesses(marker)).toEqual([]);
  }, 300_000);

  it(
    'dpkg -i of a newer package under a running daemon: it keeps provisioning, drains on the SIGTERM a restart sends, ' +
      'the new binary provisions the rest, no node lost; the user and the edited configuration are kept',
    async () => {
      // systemd is not PID 1 on this machine, so postinst's `systemctl try-restart` is played by
      // hand: with KillMode=mixed its stop is one SIGTERM to the main process, then the new start.
      const site = join(scratch, 'upgrade');
      mkdirSync(site);
      const helper = join(site, 'slow-helper');
      writeFileSync(helper, `#!/bin/sh\nsleep 1\nexec /usr/bin/node ${join(root, 'examples/helpers/minimal-helper.mjs')}\n`);
      chmodSync(helper, 0o755);
      const config = join(site, 'provisioner.yaml');
      writeFileSync(config, `helper: ${helper}\nworkers: 2\nchoria_insecure: true\nrxfleet:\n  shutdown_grace: 30s\n`);
      const env = cleanEnv({ HOME: site, RXFLEET_HELPER_BROKERS: server().url });
      const nats = ['--nats', server().url];
      const fleet = startInstalled(
        ['simulate', ...nats, '--nodes', '30', '--restart-delay', '100ms', '--exit-when-provisioned', '--json', '--report-every', '0'],
        env,
      );
      const before = startInstalled(['provision', '--config', config, ...nats], env);
      await before.next((l) => l.msg === 'connected to NATS');

      const newer = debianPackage({
        root: clone,
        binary: join(clone, 'build/package/rxfleet'),
        version: `${version}+1`,
        outDir: join(scratch, 'newer'),
        epoch: Math.floor(Date.now() / 1000),
      });
      const uid = (await ok('id', ['-u', 'rxfleet'])).stdout.trim();
      writeFileSync('/etc/rxfleet/provisioner.yaml', `${readFileSync('/etc/rxfleet/provisioner.yaml', 'utf8')}# edited on this host\n`);
      await ok('dpkg', ['--force-confold', '--install', newer]);
      expect((await ok('dpkg-query', ['-W', '-f=${Version}', 'rxfleet'])).stdout).toBe(`${version}+1`);
      expect(readFileSync('/etc/rxfleet/provisioner.yaml', 'utf8')).toMatch(/# edited on this host\n$/);
      expect((await ok('id', ['-u', 'rxfleet'])).stdout.trim()).toBe(uid);

      // Nodes are still waiting (30 nodes, 2 at a time, a second or more each): the stop comes mid-fleet.
      expect(fleet.running()).toBe(true);
      before.child.kill('SIGTERM');
      expect(await before.exited).toBe(0);
      expect(before.lines.find((l) => l.msg === 'stopped')).toMatchObject({ abandoned: 0 });
      const after = startInstalled(['provision', '--config', config, ...nats], env);
      expect(await fleet.exited).toBe(0);
      // None lost. (A node the old daemon finished may be found again by the new one before it
      // restarts out of provisioning mode: duplicates are not what this shows.)
      expect(fleet.lines.at(-1)).toMatchObject({ type: 'summary', nodes: 30, provisioned: 30 });
      after.child.kill('SIGTERM');
      expect(await after.exited).toBe(0);
    },
    300_000,
  );

  it('dpkg -r removes the program and keeps the configuration and the user; dpkg -P leaves no user, directory or file', async () => {
    // What the units would have made while running: the state, log and runtime directories.
    for (const dir of ['/var/lib/rxfleet-provision', '/var/lib/rxfleet-enrich', '/var/log/rxfleet']) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'left-by-the-daemon'), 'x');
      await ok('chown', ['-R', 'rxfleet:rxfleet', dir]);
    }
    const owned = (await ok('dpkg-query', ['--listfiles', 'rxfleet'])).stdout.split('\n').filter((p) => p !== '');
    expect(owned).toContain('/usr/bin/rxfleet');
    await ok('dpkg', ['--remove', 'rxfleet']);
    expect(existsSync('/usr/bin/rxfleet')).toBe(false);
    expect(existsSync('/lib/systemd/system/rxfleet-provision.service')).toBe(false);
    expect(existsSync('/etc/rxfleet/provisioner.yaml')).toBe(true);
    expect((await run('getent', ['passwd', 'rxfleet'])).code).toBe(0);
    // Nothing ran as the user after the demo: no daemon was started by the package.
    expect((await run('pgrep', ['-u', 'rxfleet'])).code).toBe(1);
    await ok('dpkg', ['--purge', 'rxfleet']);
    expect(await installed()).toBe('');
    for (const gone of [
      '/etc/rxfleet',
      '/var/lib/rxfleet-provision',
      '/var/lib/rxfleet-enrich',
      '/var/log/rxfleet',
      '/run/rxfleet-provision',
    ])
      expect(`${gone}: ${existsSync(gone)}`).toBe(`${gone}: false`);
    // Every file the package held, apart from shared directories such as /usr/bin.
    const left = owned.filter((p) => existsSync(p) && !statSync(p).isDirectory());
    expect(left).toEqual([]);
    expect((await run('getent', ['passwd', 'rxfleet'])).code).toBe(2);
    expect((await run('getent', ['group', 'rxfleet'])).code).toBe(2);
  }, 120_000);
});
