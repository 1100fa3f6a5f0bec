import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The sample helpers shipped in `examples/helpers/`. */
export type SampleHelper = 'minimal-helper' | 'ed25519-helper';

/**
 * The absolute path of a sample helper, found from this module whether it runs from the sources
 * (`lib/provision/`) or the build (`dist/lib/provision/`): the nearest ancestor directory holding
 * `examples/helpers/<name>.mjs`. Throws when the package was installed without its examples.
 */
export function sampleHelperPath(name: SampleHelper): string {
  for (let dir = __dirname; ; dir = dirname(dir)) {
    const candidate = join(dir, 'examples', 'helpers', `${name}.mjs`);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`sample helper ${name}.mjs not found above ${__dirname}`);
  }
}
