import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ASSETS, CLI_BUNDLE_ASSET, READ_BUNDLE_ASSET } from './assets';

/** The sentinel Node's own builds carry, which postject flips to say "a blob is injected". */
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/**
 * Makes the single executable `out` whose main script is `main` and which carries the CLI's
 * bundles `cli` and `read` (Node's single executable application): the preparation blob with the assets, a copy of the running `node`, the blob
 * stripped of its symbol table, the blob injected with postject. The binary is this Node's version and platform (linux-x64 here).
 */
export function singleExecutable(root: string, main: string, bundles: { cli: string; read: string }, out: string): void {
  // A Node built without single executable support (a distribution's shared-library build) lacks it.
  if (!readFileSync(process.execPath).includes(FUSE))
    throw new Error(`${process.execPath} has no ${FUSE}: build with a Node release from nodejs.org (or NodeSource), version 20 or newer`);
  const dir = join(out, '..');
  const config = join(dir, 'sea-config.json');
  const blob = join(dir, 'sea-prep.blob');
  writeFileSync(
    config,
    `${JSON.stringify(
      {
        main,
        output: blob,
        disableExperimentalSEAWarning: true,
        // The main script is compiled once here; the CLI it runs has a code cache of its own.
        useCodeCache: true,
        assets: {
          ...Object.fromEntries(ASSETS.map((asset) => [asset, join(root, asset)])),
          [CLI_BUNDLE_ASSET]: bundles.cli,
          [READ_BUNDLE_ASSET]: bundles.read,
        },
      },
      null,
      2,
    )}\n`,
  );
  execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: 'pipe' });
  rmSync(out, { force: true });
  copyFileSync(process.execPath, out);
  chmodSync(out, 0o755);
  // Node's release binary carries its symbol table (12 MB); the dynamic symbols stay.
  execFileSync('strip', ['--strip-unneeded', out]);
  const postject = join(root, 'node_modules', 'postject', 'dist', 'cli.js');
  // postject warns about ELF note sections it cannot name: harmless, so its output is shown only on failure.
  execFileSync(process.execPath, [postject, out, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', FUSE], { stdio: 'pipe' });
  rmSync(blob);
}
