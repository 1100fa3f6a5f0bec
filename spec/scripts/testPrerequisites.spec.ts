import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/**
 * Runs the script as `uid` with `missing` packages not installed on a Debian `codename` (bookworm
 * unless told), apt's directory a scratch one; apt-get records its arguments.
 */
function check(options: { uid: number; missing: string[]; codename?: string; sources?: string }): {
  code: number | null;
  stderr: string;
  apt: string[];
} {
  mkdirSync(join(dir, 'apt', 'sources.list.d'), { recursive: true });
  writeFileSync(join(dir, 'apt', 'sources.list.d', 'debian.sources'), options.sources ?? 'Types: deb\nSuites: bookworm bookworm-updates\n');
  writeFileSync(join(dir, 'os-release'), `ID=debian\nVERSION_CODENAME=${options.codename ?? 'bookworm'}\n`);
  stub(
    'dpkg-query',
    `for p in "$@"; do :; done; case " ${options.missing.join(' ')} " in *" $p "*) echo not-installed;; *) echo installed;; esac`,
  );
  stub('id', `echo ${options.uid}`);
  stub('apt-get', `echo "$*" >> ${join(dir, 'apt.log')}`);
  stub('go-peers', `echo go-peers >> ${join(dir, 'apt.log')}`);
  const env = {
    ...process.env,
    PATH: `${dir}:${process.env.PATH ?? ''}`,
    RXFLEET_APT_DIR: join(dir, 'apt'),
    RXFLEET_OS_RELEASE: join(dir, 'os-release'),
    RXFLEET_GO_PEERS_SCRIPT: join(dir, 'go-peers'),
  };
  const result = spawnSync('sh', [SCRIPT], { env, encoding: 'utf8' });
  const log = join(dir, 'apt.log');
  return { code: result.status, stderr: result.stderr, apt: existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [] };
}

describe('scripts/test-prerequisites.sh (npm pretest)', () => {
  it('with everything installed, as root: passes without touching apt', () => {
    expect(check({ uid: 0, missing: [] })).toEqual({ code: 0, stderr: '', apt: ['go-peers'] });
  });

  it('as root, installs exactly the missing packages, then passes', () => {
    const { code, stderr, apt } = check({ uid: 0, missing: ['nats-server', 'prometheus'] });
    expect(code).toBe(0);
    expect(stderr.trim()).toBe('npm test: installing the Debian packages the specs need: nats-server prometheus');
    expect(apt).toEqual(['update -qq', 'install -y -qq --no-install-recommends nats-server prometheus', 'go-peers']);
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
    expect(stderr.trim()).toBe('npm test: the LXD/Incus specs start private LXD and Incus daemons, which needs root: run npm test as root');
  });

  it('as root on bookworm, adds bookworm-backports as a deb822 source and installs Incus from it', () => {
    const { code, stderr, apt } = check({ uid: 0, missing: ['lxd', 'incus-base', 'incus-client'] });
    expect(code).toBe(0);
    expect(stderr.trim().split('\n')).toEqual([
      `npm test: adding bookworm-backports (for Incus 6.0 LTS) as ${join(dir, 'apt')}/sources.list.d/bookworm-backports.sources`,
      'npm test: installing the Debian packages the specs need: lxd incus-base incus-client',
    ]);
    expect(readFileSync(join(dir, 'apt', 'sources.list.d', 'bookworm-backports.sources'), 'utf8')).toBe(
      [
        'Types: deb',
        'URIs: http://deb.debian.org/debian',
        'Suites: bookworm-backports',
        'Components: main',
        'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg',
        '',
      ].join('\n'),
    );
    expect(apt).toEqual([
      'update -qq',
      'install -y -qq --no-install-recommends lxd',
      'install -y -qq --no-install-recommends -t bookworm-backports incus-base incus-client',
      'go-peers',
    ]);
  });

  it('leaves a source that already names bookworm-backports alone; on a later release Incus is in main', () => {
    const listed = check({ uid: 0, missing: ['incus-base'], sources: 'Types: deb\nSuites: bookworm bookworm-backports\n' });
    expect(listed.code).toBe(0);
    expect(existsSync(join(dir, 'apt', 'sources.list.d', 'bookworm-backports.sources'))).toBe(false);
    expect(listed.apt).toEqual(['update -qq', 'install -y -qq --no-install-recommends -t bookworm-backports incus-base', 'go-peers']);
    rmSync(join(dir, 'apt.log'));
    const trixie = check({ uid: 0, missing: ['incus-base'], codename: 'trixie' });
    expect(trixie.code).toBe(0);
    expect(existsSync(join(dir, 'apt', 'sources.list.d', 'bookworm-backports.sources'))).toBe(false);
    expect(trixie.apt).toEqual(['update -qq', 'install -y -qq --no-install-recommends incus-base', 'go-peers']);
  });

  it('not as root, names the backports command for Incus', () => {
    const { code, stderr } = check({ uid: 1000, missing: ['lxd', 'incus-base'] });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      'npm test: missing Debian packages: lxd incus-base; install them as root with: apt-get install -y --no-install-recommends lxd && apt-get install -y --no-install-recommends -t bookworm-backports incus-base',
      "npm test: (with bookworm-backports in apt's sources: run as root, this script adds it)",
    ]);
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
