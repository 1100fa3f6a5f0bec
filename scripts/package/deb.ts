import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** What the package puts where: its path in the package, the file in the repository, its mode. */
const FILES: [string, string, number][] = [
  ['lib/systemd/system/rxfleet-provision.service', 'examples/systemd/rxfleet-provision.service', 0o644],
  ['lib/systemd/system/rxfleet-enrich.service', 'examples/systemd/rxfleet-enrich.service', 0o644],
  ['etc/rxfleet/provisioner.yaml', 'examples/provisioner-full.yaml', 0o644],
  ['etc/rxfleet/choria.cfg', 'examples/choria.cfg', 0o644],
  ['etc/rxfleet/enricher.yaml', 'examples/enricher.yaml', 0o644],
  ['etc/logrotate.d/rxfleet', 'examples/logrotate/rxfleet', 0o644],
  ['usr/share/doc/rxfleet/examples/provisioner-minimal.yaml', 'examples/provisioner-minimal.yaml', 0o644],
  ['usr/share/doc/rxfleet/examples/helpers/minimal-helper.mjs', 'examples/helpers/minimal-helper.mjs', 0o644],
  ['usr/share/doc/rxfleet/examples/helpers/persistent-helper.mjs', 'examples/helpers/persistent-helper.mjs', 0o644],
  ['usr/share/doc/rxfleet/examples/helpers/persistent-helper.sh', 'examples/helpers/persistent-helper.sh', 0o644],
  ['usr/share/doc/rxfleet/examples/helpers/ed25519-helper.mjs', 'examples/helpers/ed25519-helper.mjs', 0o644],
  ['usr/share/doc/rxfleet/examples/grafana/rxfleet-provisioner.json', 'examples/grafana/rxfleet-provisioner.json', 0o644],
  ['usr/share/doc/rxfleet/examples/grafana/rxfleet-enricher.json', 'examples/grafana/rxfleet-enricher.json', 0o644],
  ['DEBIAN/postinst', 'scripts/package/debian/postinst', 0o755],
  ['DEBIAN/prerm', 'scripts/package/debian/prerm', 0o755],
  ['DEBIAN/postrm', 'scripts/package/debian/postrm', 0o755],
  ['usr/share/lintian/overrides/rxfleet', 'scripts/package/debian/lintian-overrides', 0o644],
];

const CONFFILES = ['/etc/rxfleet/provisioner.yaml', '/etc/rxfleet/choria.cfg', '/etc/rxfleet/enricher.yaml', '/etc/logrotate.d/rxfleet'];

export interface DebInput {
  root: string;
  binary: string;
  version: string;
  /** The directory the .deb is written to. */
  outDir: string;
  /** Seconds since the epoch for every file's time and the changelog (the last commit's time). */
  epoch: number;
}

function control(version: string, installedKb: number): string {
  return [
    'Package: rxfleet',
    `Version: ${version}`,
    'Architecture: amd64',
    'Maintainer: rxfleet maintainers <rxfleet@users.noreply.github.com>',
    `Installed-Size: ${installedKb}`,
    'Depends: adduser, libc6 (>= 2.28), libstdc++6 (>= 8), libgcc-s1',
    'Recommends: nats-server',
    'Suggests: incus | lxd',
    'Section: admin',
    'Priority: optional',
    'Homepage: https://github.com/rxfleet/rxfleet',
    'Description: reactive fleet automation: Choria provisioner, Incus event enricher',
    ' rxfleet is one executable with Node.js built in. `rxfleet provision` is a',
    ' drop-in replacement for the Choria Provisioner (the same configuration,',
    ' helper contract, metrics and leader election); `rxfleet enrich` turns Incus',
    ' or LXD lifecycle events into enriched, ordered events on NATS. Systemd units',
    ' for both are installed, not enabled; examples of their configuration are in',
    ' /etc/rxfleet.',
    '',
  ].join('\n');
}

const MIT = [
  'Permission is hereby granted, free of charge, to any person obtaining a copy of this software and',
  'associated documentation files (the "Software"), to deal in the Software without restriction,',
  'including without limitation the rights to use, copy, modify, merge, publish, distribute,',
  'sublicense, and/or sell copies of the Software, and to permit persons to whom the Software is',
  'furnished to do so, subject to the following conditions:',
  '.',
  'The above copyright notice and this permission notice shall be included in all copies or',
  'substantial portions of the Software.',
  '.',
  'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT',
  'NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND',
  'NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES',
  'OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN',
  'CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.',
];

/** debian/copyright in the machine-readable format: rxfleet's licence, and Node's in the binary. */
function copyright(): string {
  return [
    'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/',
    'Upstream-Name: rxfleet',
    'Source: https://github.com/rxfleet/rxfleet',
    '',
    'Files: *',
    'Copyright: 2025-2026 rxfleet contributors',
    'License: Apache-2.0',
    '',
    'Files: usr/bin/rxfleet',
    "Copyright: 2025-2026 rxfleet contributors, Node.js contributors, the bundled npm packages' authors",
    'License: Apache-2.0 and MIT',
    'Comment: a Node.js executable with the bundled rxfleet CLI injected (a single executable',
    ' application). Node.js and most bundled packages are MIT-licensed; Node.js lists the',
    ' licences of its own third-party code in its LICENSE file.',
    '',
    'License: Apache-2.0',
    ' On Debian systems, the complete text of the Apache License 2.0 is in',
    ' /usr/share/common-licenses/Apache-2.0.',
    '',
    'License: MIT',
    ...MIT.map((line) => ` ${line}`),
    '',
  ].join('\n');
}

function changelog(version: string, epoch: number): string {
  const date = new Date(epoch * 1000).toUTCString().replace(/GMT$/, '+0000');
  return `rxfleet (${version}) unstable; urgency=medium\n\n  * Built by npm run package.\n\n -- rxfleet maintainers <rxfleet@users.noreply.github.com>  ${date}\n`;
}

/** troff text shown as it is: backslashes escaped, no line read as a request. */
function literal(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .split('\n')
    .map((line) => (/^[.']/.test(line) ? `\\&${line}` : line))
    .join('\n');
}

/** rxfleet(1): the commands' own --help, so the page says what the binary it ships with does. */
function manPage(binary: string, version: string, epoch: number): string {
  const help = (...args: string[]) => execFileSync(binary, [...args, '--help'], { encoding: 'utf8' }).trimEnd();
  const commands = ['provision', 'enrich', 'provision-incus', 'validate', 'simulate', 'demo'];
  const date = new Date(epoch * 1000).toISOString().slice(0, 10);
  return [
    `.TH RXFLEET 1 ${date} "rxfleet ${version}" "User Commands"`,
    '.SH NAME',
    'rxfleet \\- reactive fleet automation: a Choria provisioner and an Incus event enricher',
    '.SH SYNOPSIS',
    '.B rxfleet',
    '.I command',
    '[options]',
    '.SH DESCRIPTION',
    '.nf',
    literal(help()),
    '.fi',
    ...commands.flatMap((command) => [`.SH ${command.toUpperCase()}`, '.nf', literal(help(command)), '.fi']),
    '.SH FILES',
    '/etc/rxfleet/ (examples of the configurations), /lib/systemd/system/rxfleet-provision.service,',
    '/lib/systemd/system/rxfleet-enrich.service',
    '.SH SEE ALSO',
    'https://github.com/rxfleet/rxfleet/blob/main/docs/README.md',
    '',
  ].join('\n');
}

function du(dir: string): number {
  const out = execFileSync('du', ['-sk', '--apparent-size', '--exclude=DEBIAN', dir], { encoding: 'utf8' });
  return Number(out.split(/\s/)[0]);
}

/**
 * Builds `rxfleet_<version>_amd64.deb` from the single executable with dpkg-deb, in a staging
 * tree beside it (removed after), every file owned by root and dated `epoch`. Returns its path.
 */
export function debianPackage(input: DebInput): string {
  const { root, binary, version, outDir, epoch } = input;
  mkdirSync(outDir, { recursive: true });
  const stage = join(outDir, 'deb-root');
  rmSync(stage, { recursive: true, force: true });
  const put = (path: string, content: Buffer | string, mode: number) => {
    const file = join(stage, path);
    mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
    writeFileSync(file, content);
    chmodSync(file, mode);
  };
  mkdirSync(join(stage, 'usr/bin'), { recursive: true });
  copyFileSync(binary, join(stage, 'usr/bin/rxfleet'));
  chmodSync(join(stage, 'usr/bin/rxfleet'), 0o755);
  for (const [path, source, mode] of FILES) put(path, readFileSync(join(root, source)), mode);
  put('usr/share/doc/rxfleet/copyright', copyright(), 0o644);
  put('usr/share/doc/rxfleet/changelog.gz', gzipSync(changelog(version, epoch), { level: 9 }), 0o644);
  put('usr/share/man/man1/rxfleet.1.gz', gzipSync(manPage(binary, version, epoch), { level: 9 }), 0o644);
  put('DEBIAN/conffiles', `${CONFFILES.join('\n')}\n`, 0o644);
  put('DEBIAN/control', control(version, du(stage)), 0o644);
  execFileSync('find', [stage, '-type', 'd', '-exec', 'chmod', '0755', '{}', '+']);
  execFileSync('find', [stage, '-exec', 'touch', '-h', '-d', `@${epoch}`, '{}', '+']);
  utimesSync(stage, epoch, epoch);
  const deb = join(outDir, `rxfleet_${version}_amd64.deb`);
  rmSync(deb, { force: true });
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', stage, deb], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) },
  });
  rmSync(stage, { recursive: true, force: true });
  if (statSync(deb).size === 0) throw new Error(`${deb} is empty`);
  return deb;
}
