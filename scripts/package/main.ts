// `npm run package`: the CLI as one executable and a Debian package, in build/package/:
//   rxfleet.cjs                the whole CLI bundled by esbuild (runs with any Node 20+)
//   rxfleet-read.cjs           `status` and `history` alone (bin/readProgram.ts), likewise
//   sea-main.cjs               the binary's main script, which runs rxfleet.cjs with a code cache
//   rxfleet                    the single executable (Node 20's SEA): no Node, no node_modules needed
//   rxfleet_<version>_amd64.deb  /usr/bin/rxfleet, both systemd units, /etc/rxfleet/
// Needs the operator kit built (`npm ci` builds it), linux-x64 and dpkg-deb. `--no-deb` stops
// after the executable.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { bundle, bundleSeaMain } from './bundle';
import { debianPackage } from './deb';
import { singleExecutable } from './sea';

async function main(): Promise<void> {
  const root = resolve(__dirname, '../..');
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`builds for linux-x64 only, not ${process.platform}-${process.arch}`);
  const out = join(root, 'build', 'package');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const started = Date.now();
  const cjs = join(out, 'rxfleet.cjs');
  await bundle(root, cjs, version, 'binary');
  const readCjs = join(out, 'rxfleet-read.cjs');
  await bundle(root, readCjs, version, 'binary', 'read');
  const seaMain = join(out, 'sea-main.cjs');
  await bundleSeaMain(root, seaMain);
  const binary = join(out, 'rxfleet');
  singleExecutable(root, seaMain, { cli: cjs, read: readCjs }, binary);
  const mb = (file: string) => `${(statSync(file).size / 1e6).toFixed(1)} MB`;
  console.log(`${binary}: ${mb(binary)} (bundle ${mb(cjs)}), Node ${process.version}`);
  if (process.argv.includes('--no-deb')) return;
  // The files' dates in the package: the last commit's, so one commit gives one package.
  let epoch = Math.floor(Date.now() / 1000);
  try {
    epoch = Number(execFileSync('git', ['log', '-1', '--format=%ct'], { cwd: root, encoding: 'utf8' }).trim());
  } catch {
    // Not a git checkout: the build's own time.
  }
  const deb = debianPackage({ root, binary, version, outDir: out, epoch });
  console.log(`${deb}: ${mb(deb)} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

main().catch((error: unknown) => {
  console.error(`npm run package: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
