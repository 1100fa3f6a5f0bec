// The single executable's main script: the CLI's bundle is one of the binary's assets
// (CLI_BUNDLE_ASSET; READ_BUNDLE_ASSET for `status` and `history`), run from a code cache of the
// same command's last run (bin/compileCache.ts), with the binary's `require` (Node's built-ins: the
// bundle needs nothing else).
import { dirname } from 'node:path';
import { getAsset } from 'node:sea';
import { compileCacheDir, launchOf, runBundle } from '../../bin/compileCache';
import { CLI_BUNDLE_ASSET, READ_BUNDLE_ASSET } from './assets';

// A sample helper run by the binary (--sample-helper) has no cache and runs from the whole CLI.
const launch = launchOf(process.argv.slice(2));
const asset = launch.bundle === 'read' ? READ_BUNDLE_ASSET : CLI_BUNDLE_ASSET;
runBundle({
  // ASCII only (scripts/package/bundle.ts): latin1 reads it faster than UTF-8.
  source: Buffer.from(getAsset(asset)).toString('latin1'),
  // Where it would be, were it a file: stack traces name it.
  filename: `${process.execPath}:${asset}`,
  dirname: dirname(process.execPath),
  require,
  key: launch.key,
  cacheDir: compileCacheDir(process.env),
  quick: launch.quick,
});
