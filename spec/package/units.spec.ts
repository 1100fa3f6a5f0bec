import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';

// The systemd side of a host: the example units (which the Debian package installs as they are)
// and the drop-in docs/provisioner/switching-from-go.md gives for upstream's own unit, each read by
// systemd-analyze as systemd would read it.
const root = resolve(__dirname, '../..');
const run = promisify(execFile);
const UNITS = ['rxfleet-provision.service', 'rxfleet-enrich.service'];

/** systemd-analyze's output, whatever its exit status. */
async function analyze(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run('systemd-analyze', args);
    return { code: 0, out: `${stdout}${stderr}` };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: `${e.stdout}${e.stderr}` };
  }
}

/** `key=value` lines of a unit's [Service] section, the last value of each key. */
function service(text: string): Map<string, string> {
  const section = text.slice(text.indexOf('[Service]'), text.indexOf('[Install]') < 0 ? undefined : text.indexOf('[Install]'));
  return new Map(
    section
      .split('\n')
      .filter((l) => /^\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/** The unit with its binary replaced by one that exists on any machine (systemd-analyze checks it). */
const runnable = (text: string) => text.replaceAll('/usr/bin/rxfleet', '/bin/true');

let scratch: string;
beforeAll(() => (scratch = mkdtempSync(join(tmpdir(), 'rxfleet-package-units-'))));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('examples/systemd/ (the units the Debian package installs)', () => {
  it.each(UNITS)('%s: systemd-analyze verify says nothing, and security rates its exposure 3.5 or less', async (unit) => {
    const copy = join(scratch, unit);
    writeFileSync(copy, runnable(readFileSync(join(root, 'examples/systemd', unit), 'utf8')));
    expect(await analyze('verify', copy)).toEqual({ code: 0, out: '' });
    const security = await analyze('security', '--offline=true', '--threshold=35', copy);
    const level = Number(/Overall exposure level for \S+: ([\d.]+)/.exec(security.out)?.[1]);
    expect(level).toBeLessThanOrEqual(3.5);
    expect(security.code).toBe(0);
  });

  it.each(UNITS)('%s: starts /usr/bin/rxfleet, and every path the daemon writes is a directory systemd makes for it', (unit) => {
    const s = service(readFileSync(join(root, 'examples/systemd', unit), 'utf8'));
    const argv = (s.get('ExecStart') ?? '').split(/\s+/);
    expect(argv[0]).toBe('/usr/bin/rxfleet');
    expect(s.get('ProtectSystem')).toBe('strict');
    // Everything else is read-only under ProtectSystem=strict: the writable places are these.
    const writable = [`/var/lib/${s.get('StateDirectory')}/`, `/var/log/${s.get('LogsDirectory')}/`, `/run/${s.get('RuntimeDirectory')}/`];
    expect(writable.every((dir) => !dir.includes('undefined'))).toBe(true);
    const written = ['--pid', '--data-dir'].flatMap((flag) => (argv.includes(flag) ? [argv[argv.indexOf(flag) + 1]] : []));
    expect(written.length).toBeGreaterThan(0);
    for (const path of written) expect(`${path}: ${writable.some((dir) => `${path}/`.startsWith(dir))}`).toBe(`${path}: true`);
    expect(s.get('WorkingDirectory')).toBe(`/var/lib/${s.get('StateDirectory')}`);
    expect(s.get('KillMode')).toBe('mixed');
  });

  it("rxfleet-enrich.service: the shipped enricher.yaml's data_dir is the unit's state directory", () => {
    const s = service(readFileSync(join(root, 'examples/systemd/rxfleet-enrich.service'), 'utf8'));
    const config = parse(readFileSync(join(root, 'examples/enricher.yaml'), 'utf8')) as { data_dir: string };
    expect(config.data_dir).toBe(`/var/lib/${s.get('StateDirectory')}`);
  });
});

describe("the drop-in for upstream's choria-provisioner.service (docs/provisioner/switching-from-go.md)", () => {
  // Upstream's unit as its package installs it (choria-io/provisioner, packager/templates/el/el7,
  // rendered with bindir /usr/sbin and etcdir /etc/choria-provisioner).
  const UPSTREAM = [
    '[Unit]',
    'Description=Choria Server Provisioner',
    'After=network.target',
    '',
    '[Service]',
    'StandardOutput=syslog',
    'StandardError=syslog',
    'User=root',
    'Group=root',
    'ExecStart=/usr/sbin/choria-provisioner run --config=/etc/choria-provisioner/choria-provisioner.yaml',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
  const doc = readFileSync(join(root, 'docs/provisioner/switching-from-go.md'), 'utf8');
  const dropIn = /```ini\n# \/etc\/systemd\/system\/choria-provisioner\.service\.d\/rxfleet\.conf\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';

  /** Upstream's unit with `conf` as its drop-in, in a directory of its own; its path. */
  function install(name: string, conf: string): string {
    const dir = join(scratch, name);
    mkdirSync(join(dir, 'choria-provisioner.service.d'), { recursive: true });
    writeFileSync(join(dir, 'choria-provisioner.service'), UPSTREAM.replace('/usr/sbin/choria-provisioner', '/bin/true'));
    writeFileSync(join(dir, 'choria-provisioner.service.d', 'rxfleet.conf'), runnable(conf));
    return join(dir, 'choria-provisioner.service');
  }

  it('replaces ExecStart with /usr/bin/rxfleet on the same files, drains with KillMode=mixed, waits out the grace period', () => {
    const s = service(dropIn);
    expect(dropIn).toMatch(/^\[Service\]\nExecStart=\nExecStart=\/usr\/bin\/rxfleet run /);
    expect(s.get('ExecStart')).toContain('--config=/etc/choria-provisioner/choria-provisioner.yaml');
    expect(s.get('KillMode')).toBe('mixed');
    expect(s.get('KillSignal') ?? 'SIGTERM').toBe('SIGTERM');
    expect(Number(/^(\d+)s?$/.exec(s.get('TimeoutStopSec') ?? '')?.[1])).toBeGreaterThan(45);
  });

  it('systemd-analyze verify reads it with no complaint of its own (upstream keeps its own two lines about syslog)', async () => {
    const { out } = await analyze('verify', install('good', dropIn));
    const lines = out.trim().split('\n').filter(Boolean);
    expect(lines.filter((l) => l.includes('rxfleet.conf'))).toEqual([]);
    for (const line of lines) expect(line).toMatch(/choria-provisioner\.service:[67]: Standard output type syslog is obsolete/);
    // The same check sees a mistake in the drop-in: it is read, not skipped.
    const broken = await analyze('verify', install('broken', dropIn.replace('KillMode=mixed', 'KillMode=drain')));
    expect(broken.out).toMatch(/rxfleet\.conf:\d+: Failed to parse kill mode specification, ignoring: drain/);
  });

  it('systemd-analyze security: the drop-in changes the binary, not the sandbox (root, as upstream)', async () => {
    const level = async (path: string) =>
      Number(/Overall exposure level for \S+: ([\d.]+)/.exec((await analyze('security', '--offline=true', path)).out)?.[1]);
    const upstreamOnly = join(scratch, 'upstream', 'choria-provisioner.service');
    mkdirSync(join(upstreamOnly, '..'), { recursive: true });
    writeFileSync(upstreamOnly, UPSTREAM.replace('/usr/sbin/choria-provisioner', '/bin/true'));
    const before = await level(upstreamOnly);
    expect(before).toBeGreaterThan(0);
    expect(await level(install('security', dropIn))).toBe(before);
    expect(existsSync(upstreamOnly)).toBe(true);
  });
});
