#!/usr/bin/env node
// The npm install's `rxfleet`: the CLI as one bundle (dist/bin/rxfleet.bundle.cjs, made by `npm run
// build`; `status` and `history` from dist/bin/rxfleet-read.bundle.cjs, theirs alone), started
// from a code cache of the same command's last run (bin/compileCache.ts). Run from the sources,
// with no bundle beside it, it loads the program's modules as they are.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { compileCacheDir, launchOf, runBundle } from './compileCache';

const launch = launchOf(process.argv.slice(2));
const filename = join(__dirname, launch.bundle === 'read' ? 'rxfleet-read.bundle.cjs' : 'rxfleet.bundle.cjs');
let source: string | undefined;
try {
  // ASCII only (scripts/package/bundle.ts): latin1 reads it faster than UTF-8.
  source = readFileSync(filename, 'latin1');
} catch {
  source = undefined;
}
if (source === undefined) void import('./program.js');
else
  runBundle({
    source,
    filename,
    dirname: __dirname,
    require: createRequire(filename),
    key: launch.key,
    cacheDir: compileCacheDir(process.env),
    quick: launch.quick,
  });
