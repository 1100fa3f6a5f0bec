// The entry of the bundle `npm run package` makes (scripts/package/bundle.ts), which the single
// executable's main script (scripts/package/seaMain.ts) runs: what a file tree gives
// `node dist/bin/rxfleet.js` and a lone binary has not.
//
// - Files the CLI finds beside itself (the demo's sample helpers, the LXD image script): in the
//   binary they are assets (sea-config.json); the first command that asks for one gets them
//   written to a private temporary directory, removed when the process exits. The bundle's
//   `__dirname` in the two modules that look for them is rewritten to `packageDir()` below.
// - The sample helpers are Node.js scripts, and a host with only the binary has no Node: each one
//   is bundled here too, and its extracted copy starts with `#!<this binary> --sample-helper`, so
//   the kernel runs it with the binary, which runs the bundled copy (the helper contract is the
//   same: stdin, stdout, its environment).
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as sea from 'node:sea';
import { ASSETS } from './assets';

const SAMPLE_HELPER_FLAG = '--sample-helper';
const inBinary = sea.isSea();
let extracted: string | undefined;

/** Where the assets are: this bundle's directory (run by node), or their extracted copy (the binary). */
function packageDir(): string {
  if (!inBinary) return __dirname;
  if (extracted !== undefined) return extracted;
  const dir = mkdtempSync(join(tmpdir(), 'rxfleet-'));
  // Registered before anything is written, so a failure half-way leaves nothing either.
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const asset of ASSETS) {
    const file = join(dir, asset);
    mkdirSync(dirname(file), { recursive: true });
    let text = sea.getAsset(asset, 'utf8');
    if (asset.startsWith('examples/helpers/')) {
      text = `#!${process.execPath} ${SAMPLE_HELPER_FLAG}\n// The copy of ${asset} built into ${process.execPath}, which runs it.\n${text.replace(/^#!.*\n/, '')}`;
    }
    writeFileSync(file, text, { mode: 0o700 });
    chmodSync(file, 0o700);
  }
  extracted = dir;
  return dir;
}
(globalThis as { __rxfleetPackageDir?: () => string }).__rxfleetPackageDir = packageDir;

// In the binary, process.argv[1] repeats the executable's path, as node's script path would.
if (inBinary && process.argv[2] === SAMPLE_HELPER_FLAG) {
  const script = process.argv[3] ?? '';
  process.argv.splice(2, 2);
  // The helpers are plain JavaScript run for what they do, with no types to import.
  // @ts-expect-error TS7016
  if (script.endsWith('/persistent-helper.mjs')) void import('../../examples/helpers/persistent-helper.mjs');
  // @ts-expect-error TS7016
  else if (script.endsWith('/minimal-helper.mjs')) void import('../../examples/helpers/minimal-helper.mjs');
  else {
    console.error(`rxfleet: ${SAMPLE_HELPER_FLAG}: no sample helper ${script} in this binary`);
    process.exitCode = 1;
  }
} else {
  void import('../../bin/program.js');
}
