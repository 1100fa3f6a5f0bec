import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/*
 * The floors of lib/: no import goes up.
 *
 * The rule. Every folder of lib/ that holds folders lists its parts bottom first in FLOORS: its
 * folders by name, and `.` for the files that sit in it directly. An import from one part to
 * another must go to a part on a lower floor; the parts of one floor know nothing of each other.
 * An import is judged in the deepest folder that holds both files: `claims/claims.ts` importing
 * `lib/choria/duration.ts` is judged in lib/ (provision stands above choria), importing
 * `lib/provision/cycle/cycleError.ts` in lib/provision/ (claims stand above cycle). The files of one
 * folder import each other freely (importCircles.spec.ts keeps them free of circles).
 *
 * So a folder may import its own files, the folders below it, and the shared modules at the foot
 * of each folder around it (lib/'s loose files: the logger, durations, addresses, the wording of a
 * configuration problem), never a folder beside it on its floor or above it.
 *
 * Why floors written down rather than "no circle between folders": a graph free of circles lets
 * in any new import that closes no loop, so the layering drifts an import at a time and nobody
 * sees it; the list below is the map of each folder, read bottom up, and an import that changes
 * the map has to change the list, where a reviewer sees it.
 */
const FLOORS: Record<string, readonly (readonly string[])[]> = {
  // The shared modules; the wire protocol and the Incus API; what each is built into; the
  // provisioner, whose Incus feed reads the enricher's events (their payload and its filters).
  lib: [['.'], ['choria', 'incus'], ['election', 'enricher', 'simulate'], ['provision']],
  // The envelopes and their codecs; the client built on them (requests, retries, security).
  'lib/choria': [['protocol'], ['.']],
  // The model; what is read and what goes out; the rounds, repairs' metrics and the followers;
  // the owner and the cold store; the configuration; the pipeline that wires them.
  'lib/enricher': [
    ['jetstream', 'model'],
    ['output', 'reads'],
    ['follow', 'metrics', 'rounds'],
    ['coldStore', 'owner'],
    ['config'],
    ['pipeline'],
  ],
  // What a sighting is and where it comes from, what a node presents and is given, an upgrade's
  // decision; the helper's contract and the series; the configuration; the cycle; what runs
  // around a cycle (a claim, a failing node's backoff, a rehearsal); its records; what reads them,
  // and the pipeline (`pipeline.ts`, which takes claims and backoff as ports it names itself).
  'lib/provision': [
    ['credentials', 'sightings', 'upgrade'],
    ['helper', 'metrics'],
    ['config'],
    ['cycle'],
    ['backoff', 'claims', 'dryRun'],
    ['records'],
    ['.', 'status'],
  ],
};

const ROOT = resolve(__dirname, '../..');

/** Every source file under `path`, as repository paths. */
function sources(path: string): string[] {
  const full = join(ROOT, path);
  if (statSync(full).isFile()) return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(full).flatMap((name) => sources(join(path, name)));
}

/** Every folder under `path` (itself included) that holds a folder. */
function foldersWithFolders(path: string): string[] {
  const folders = readdirSync(join(ROOT, path)).filter((name) => statSync(join(ROOT, path, name)).isDirectory());
  return [...(folders.length > 0 ? [path] : []), ...folders.flatMap((name) => foldersWithFolders(`${path}/${name}`))];
}

// Every relative import and re-export, `import type` included: a type is still a reason to read
// the file it comes from.
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g;

/** The files of lib/ that `file` imports, as repository paths. */
function importsOf(file: string, known: ReadonlySet<string>): string[] {
  return [...readFileSync(join(ROOT, file), 'utf8').matchAll(IMPORT)]
    .map(([, spec]) => relative(ROOT, resolve(ROOT, dirname(file), spec)).replace(/\.js$/, ''))
    .map((base) => [`${base}.ts`, `${base}/index.ts`].find((candidate) => known.has(candidate)))
    .filter((target): target is string => target !== undefined);
}

/** Where an import is judged: the deepest folder holding both files, and the part of it each is in. */
function judged(from: string, to: string): { folder: string; fromPart: string; toPart: string } {
  const a = from.split('/');
  const b = to.split('/');
  let shared = 0;
  while (shared < Math.min(a.length, b.length) - 1 && a[shared] === b[shared]) shared++;
  const part = (segments: string[]): string => (segments.length === shared + 1 ? '.' : segments[shared]);
  return { folder: a.slice(0, shared).join('/'), fromPart: part(a), toPart: part(b) };
}

/** The imports that break the floors, as `from -> to (why)`; `undeclared` when a folder has no floors. */
function upwardImports(
  graph: ReadonlyMap<string, readonly string[]>,
  floors: Record<string, readonly (readonly string[])[]>,
): Array<{ arrow: string; why: string }> {
  const out: Array<{ arrow: string; why: string }> = [];
  for (const [from, targets] of graph) {
    for (const to of targets) {
      const { folder, fromPart, toPart } = judged(from, to);
      if (fromPart === '.' && toPart === '.') continue;
      const levels = floors[folder];
      const floorOf = (part: string): number => levels?.findIndex((floor) => floor.includes(part)) ?? -1;
      const [high, low] = [floorOf(fromPart), floorOf(toPart)];
      const why =
        levels === undefined
          ? `${folder}/ has no floors`
          : high === -1 || low === -1
            ? `${folder}/${high === -1 ? fromPart : toPart} is on no floor of ${folder}/`
            : high === low
              ? `${fromPart} and ${toPart} share a floor of ${folder}/`
              : high < low
                ? `${toPart} stands above ${fromPart} in ${folder}/`
                : undefined;
      if (why !== undefined) out.push({ arrow: `${from} -> ${to}`, why });
    }
  }
  return out;
}

describe('the floors of lib/', () => {
  const files = sources('lib');
  const known = new Set(files);
  const graph = new Map(files.map((file) => [file, importsOf(file, known)]));

  it('are read off the source: an import is judged in the deepest folder holding both files', () => {
    expect(graph.get('lib/provision/claims/claims.ts')).toContain('lib/provision/cycle/cycleResult.ts');
    expect(judged('lib/provision/claims/claims.ts', 'lib/choria/duration.ts')).toEqual({
      folder: 'lib',
      fromPart: 'provision',
      toPart: 'choria',
    });
    expect(judged('lib/provision/claims/claims.ts', 'lib/provision/cycle/cycleError.ts')).toEqual({
      folder: 'lib/provision',
      fromPart: 'claims',
      toPart: 'cycle',
    });
    expect(judged('lib/provision/pipeline.ts', 'lib/provision/sightings/sighting.ts')).toEqual({
      folder: 'lib/provision',
      fromPart: '.',
      toPart: 'sightings',
    });
    expect(judged('lib/logger.ts', 'lib/redact.ts')).toEqual({ folder: 'lib', fromPart: '.', toPart: '.' });
    const toy = new Map([
      ['lib/a/x.ts', ['lib/b/y.ts']],
      ['lib/b/y.ts', ['lib/c/z.ts', 'lib/a/w.ts']],
      ['lib/c/z.ts', ['lib/u.ts']],
    ]);
    expect(upwardImports(toy, { lib: [['.'], ['c'], ['a', 'b']] }).map(({ why }) => why)).toEqual([
      'a and b share a floor of lib/',
      'b and a share a floor of lib/',
    ]);
    expect(upwardImports(toy, { lib: [['.'], ['b'], ['a']] })).toEqual([
      { arrow: 'lib/b/y.ts -> lib/c/z.ts', why: 'lib/c is on no floor of lib/' },
      { arrow: 'lib/b/y.ts -> lib/a/w.ts', why: 'a stands above b in lib/' },
      { arrow: 'lib/c/z.ts -> lib/u.ts', why: 'lib/c is on no floor of lib/' },
    ]);
  });

  it('name every folder of lib/ that holds folders, and each of its parts exactly once', () => {
    expect(Object.keys(FLOORS).sort()).toEqual(foldersWithFolders('lib').sort());
    for (const [folder, floors] of Object.entries(FLOORS)) {
      const entries = readdirSync(join(ROOT, folder));
      const parts = [
        ...entries.filter((name) => statSync(join(ROOT, folder, name)).isDirectory()),
        ...(entries.some((name) => name.endsWith('.ts')) ? ['.'] : []),
      ];
      expect({ folder, parts: floors.flat().sort() }).toEqual({ folder, parts: parts.sort() });
    }
  });

  it('have no import going up', () => {
    expect(upwardImports(graph, FLOORS).map(({ arrow }) => arrow)).toEqual([]);
  });
});
