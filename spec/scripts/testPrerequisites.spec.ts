import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

// npm's `pretest`: what `npm test` needs from the machine, checked before jest starts. Run here with
// dpkg-query, id and apt-get replaced by stubs on PATH, so every case runs on any machine.
const SCRIPT = resolve(__dirname, '../../scripts/test-prerequisites.sh');

let dir: string;
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'rxfleet-prereq-'))));
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function stub(name: string, body: string): void {
  writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(dir, name), 0o755);
}

/** Runs the script as `uid` with `missing` packages not installed; apt-get records its arguments. */
function check(options: { uid: number; missing: string[] }): { code: number | null; stderr: string; apt: string[] } {
  stub(
    'dpkg-query',
    `for p in "$@"; do :; done; case " ${options.missing.join(' ')} " in *" $p "*) echo not-installed;; *) echo installed;; esac`,
  );
  stub('id', `echo ${options.uid}`);
  stub('apt-get', `echo "$*" >> ${join(dir, 'apt.log')}`);
  const result = spawnSync('sh', [SCRIPT], { env: { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` }, encoding: 'utf8' });
  const log = join(dir, 'apt.log');
  return { code: result.status, stderr: result.stderr, apt: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [] };
}

describe('scripts/test-prerequisites.sh (npm pretest)', () => {
  it('with everything installed, as root: passes without touching apt', () => {
    expect(check({ uid: 0, missing: [] })).toEqual({ code: 0, stderr: '', apt: [] });
  });

  it('as root, installs exactly the missing packages, then passes', () => {
    const { code, stderr, apt } = check({ uid: 0, missing: ['nats-server', 'prometheus'] });
    expect(code).toBe(0);
    expect(stderr.trim()).toBe('npm test: installing the Debian packages the specs need: nats-server prometheus');
    expect(apt).toEqual(['update -qq', 'install -y -qq --no-install-recommends nats-server prometheus']);
  });

  it('not as root, says once what to install and how, and stops before jest', () => {
    const { code, stderr, apt } = check({ uid: 1000, missing: ['lxd', 'busybox-static'] });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      'npm test: missing Debian packages: lxd busybox-static; install them as root with: apt-get install -y --no-install-recommends lxd busybox-static',
    ]);
    expect(apt).toEqual([]);
  });

  it('not as root with everything installed, says the LXD specs need root', () => {
    const { code, stderr } = check({ uid: 1000, missing: [] });
    expect(code).toBe(1);
    expect(stderr.trim()).toBe('npm test: the LXD specs start private LXD daemons, which needs root: run npm test as root');
  });

  it('is what npm test runs first, and what .ci/run relies on', () => {
    const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.pretest).toMatch(/^sh scripts\/test-prerequisites\.sh && /);
    // npm ci runs prepare, never pretest: the apt step cannot run during an install.
    expect(pkg.scripts.prepare).not.toContain('test-prerequisites');
    const ci = readFileSync(resolve(__dirname, '../../.ci/run'), 'utf8');
    expect(ci).toMatch(/\nnpm test /);
    expect(ci).not.toContain('apt-get');
  });
});
