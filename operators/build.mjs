// `npm run build`: the kit's two builds from one source, with tsc (no bundler: one module per file
// in each, so a bundler drops what is not imported).
//
// - dist/cjs: CommonJS, what Node loads whichever way the kit is imported (`require` or `import`,
//   the package's `node` condition), as rxjs does: one copy of the kit and of rxjs per process.
// - dist/esm: ES modules, what bundlers take (`import`, and `module` under `node` for a bundle
//   made for Node), loading rxjs the same way.
//
// Each tree is marked with its module type, so Node and TypeScript read its .js and .d.ts files
// as what they are, and with `sideEffects: false`: a bundler reads the nearest package.json, which
// is the tree's, so without it the package's own `sideEffects: false` would never be seen and
// nothing would be dropped. Source maps and declaration maps point at the sources shipped beside
// them.
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');

rmSync(join(here, 'dist'), { recursive: true, force: true });
for (const [config, type] of [
  ['tsconfig.json', 'commonjs'],
  ['tsconfig.esm.json', 'module'],
]) {
  execFileSync(process.execPath, [tsc, '-p', join(here, config)], { stdio: 'inherit' });
  const out = join(here, 'dist', type === 'module' ? 'esm' : 'cjs');
  writeFileSync(join(out, 'package.json'), `${JSON.stringify({ type, sideEffects: false }, null, 2)}\n`);
}
