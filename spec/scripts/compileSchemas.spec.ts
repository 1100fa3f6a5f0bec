import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COMPILED_SCHEMAS, compiledSchemaText } from '../../scripts/compileSchemas';
import { parseProvisionerConfig } from '../../lib/provision/config/config';

const ROOT = join(__dirname, '../..');

describe('the validators compiled ahead of time (scripts/compileSchemas.ts)', () => {
  it.each(COMPILED_SCHEMAS.map((t) => [t.file, t] as const))('%s is what its schema gives now', (_file, target) => {
    // A schema changed without running the script fails here, naming the file to write again.
    expect(readFileSync(join(ROOT, target.file), 'utf8')).toBe(compiledSchemaText(target));
  });

  it('are what the daemon checks with: defaults filled in, every error reported, the schema read back for the message', () => {
    const { config } = parseProvisionerConfig('helper: /bin/true\n', { file: 'p.yaml' });
    expect(config?.interval).toBe('1m');
    const { problems } = parseProvisionerConfig('helper: /bin/true\nworkers: -1\ninterval: 7\n', { file: 'p.yaml' });
    expect(problems.filter((p) => p.severity === 'error').map((p) => `${p.path}: ${p.message}`)).toEqual([
      expect.stringMatching(/^workers: expected a whole number >= 0 \(0 means one per CPU\)/),
      expect.stringMatching(/^interval: expected a duration of at least 1m such as 5m or 1h/),
    ]);
  });
});
