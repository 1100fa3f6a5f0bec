import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import semver from 'semver';

// What a user installs: the package's files, its licence, and the Node versions it claims.
const root = resolve(__dirname, '..');
const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { license: string; engines: { node: string } };
const lock = JSON.parse(readFileSync(resolve(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[] }>;
};

describe('the published package', () => {
  it('carries a LICENSE file with the licence package.json names', () => {
    expect(pkg.license).toBe('Apache-2.0');
    const text = readFileSync(resolve(root, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(text).toContain('END OF TERMS AND CONDITIONS');
  });

  it('ships no source map that points at a file it does not ship', () => {
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' }),
    ) as [{ files: { path: string }[] }];
    const files = new Set(packed.files.map((f) => f.path));
    expect(files.has('LICENSE')).toBe(true);
    expect(files.has('dist/bin/rxfleet.js')).toBe(true);
    // rxjs is bundled as its registry tarball is (see "bundleDependencies" below); its own maps name
    // tslib sources it has never shipped, which is rxjs's to fix.
    const ours = (f: string) => !f.startsWith('node_modules/rxjs/');
    for (const map of [...files].filter((f) => f.endsWith('.map') && ours(f))) {
      const { sources } = JSON.parse(readFileSync(resolve(root, map), 'utf8')) as { sources: string[] };
      for (const source of sources) expect(files).toContain(resolve('/', map, '..', source).slice(1));
    }
    // A .js that names a map must ship it.
    for (const js of [...files].filter((f) => f.endsWith('.js') && ours(f))) {
      const named = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(resolve(root, js), 'utf8'))?.[1];
      if (named !== undefined) expect(files).toContain(resolve('/', js, '..', named).slice(1));
    }
  });

  // `npm ci --engine-strict` refuses a package whose engines exclude the running Node: every
  // package the lock installs must accept the oldest release of each line package.json claims.
  it.each(['20.19.0', '22.13.0', '24.0.0'])(
    'claims Node %s, and every installed package accepts it (npm ci --engine-strict is clean)',
    (version) => {
      expect(semver.satisfies(version, pkg.engines.node)).toBe(true);
      const refusing = Object.entries(lock.packages)
        .filter(
          ([path, entry]) =>
            path !== '' &&
            !Array.isArray(entry.engines) &&
            typeof entry.engines?.node === 'string' &&
            !semver.satisfies(version, entry.engines.node),
        )
        .map(([path, entry]) => `${path} (${(entry.engines as { node: string }).node})`);
      expect(refusing).toEqual([]);
    },
  );

  it('claims no Node line it was not checked against', () => {
    expect(semver.satisfies('18.20.0', pkg.engines.node)).toBe(false);
    expect(semver.satisfies('20.18.0', pkg.engines.node)).toBe(false);
    expect(semver.satisfies('22.12.0', pkg.engines.node)).toBe(false);
  });
});
