import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The sample helpers shipped in `examples/helpers/`: the Node.js ones by name, the sh one by file name. */
export type SampleHelper = 'minimal-helper' | 'ed25519-helper' | 'persistent-helper' | 'persistent-helper.sh';

/**
 * The absolute path of a sample helper, found from this module whether it runs from the sources
 * (`bin/`) or the build (`dist/bin/`): the nearest ancestor directory holding
 * `examples/helpers/<file>` (`<name>.mjs` for the Node.js helpers). Throws when the package was
 * installed without its examples.
 */
export function sampleHelperPath(name: SampleHelper): string {
  const file = name.endsWith('.sh') ? name : `${name}.mjs`;
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, 'examples', 'helpers', file);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`sample helper ${file} not found above ${__dirname}`);
  }
}
