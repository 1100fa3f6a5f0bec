// `npm run build`'s last step: the CLI bundled into dist/bin/rxfleet.bundle.cjs, and `status` and
// `history` alone into dist/bin/rxfleet-read.bundle.cjs, which the npm install's dist/bin/rxfleet.js
// runs (scripts/package/bundle.ts, target `npm`).
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { bundle } from './bundle';

const root = resolve(__dirname, '../..');
const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
Promise.all([
  bundle(root, join(root, 'dist/bin/rxfleet.bundle.cjs'), version, 'npm'),
  bundle(root, join(root, 'dist/bin/rxfleet-read.bundle.cjs'), version, 'npm', 'read'),
]).catch((error: unknown) => {
  console.error(`npm run build: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
});
