import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const ENRICHER = 'lib/enricher';

/** Every source file under `path`. */
function sources(path: string): string[] {
  const full = join(ROOT, path);
  if (statSync(full).isFile()) return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(full).flatMap((name) => sources(join(path, name)));
}

// Every relative import and re-export, `import type` included.
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g;

/** The folder of lib/enricher a repository path sits in, if it sits in one. */
const folderOf = (path: string): string | undefined =>
  path.startsWith(`${ENRICHER}/`) && path.split('/').length > 3 ? path.split('/')[2] : undefined;

/** Which folders of lib/enricher each folder imports, read off the source. */
function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sources(ENRICHER)) {
    const from = folderOf(file);
    if (from === undefined) continue;
    const to = graph.get(from) ?? new Set<string>();
    graph.set(from, to);
    for (const [, spec] of readFileSync(join(ROOT, file), 'utf8').matchAll(IMPORT)) {
      const target = folderOf(relative(ROOT, resolve(ROOT, dirname(file), spec)));
      if (target !== undefined && target !== from) to.add(target);
    }
  }
  return graph;
}

/**
 * The floors, bottom first: each folder on the floor above the highest one it imports. A folder
 * that imports one on its own floor or above (an import going up, which is always part of a
 * circle) is never placed: it is returned as `upward`.
 */
function floors(graph: Map<string, ReadonlySet<string>>): { floors: string[][]; upward: string[] } {
  const placed = new Map<string, number>();
  const out: string[][] = [];
  for (let changed = true; changed;) {
    changed = false;
    for (const [folder, imports] of graph) {
      if (placed.has(folder) || ![...imports].every((to) => placed.has(to))) continue;
      const floor = Math.max(-1, ...[...imports].map((to) => placed.get(to)!)) + 1;
      placed.set(folder, floor);
      (out[floor] ??= []).push(folder);
      changed = true;
    }
  }
  return { floors: out.map((floor) => floor.sort()), upward: [...graph.keys()].filter((folder) => !placed.has(folder)).sort() };
}

describe('the floors of lib/enricher', () => {
  const graph = folderGraph();

  it('are read off the source: the pipeline imports the owner, the owner the model, the model no other folder', () => {
    expect(graph.get('pipeline')).toContain('owner');
    expect(graph.get('owner')).toContain('model');
    expect([...(graph.get('model') ?? [])]).toEqual([]);
    const toy = new Map([
      ['a', new Set<string>()],
      ['b', new Set(['a'])],
      ['c', new Set(['b', 'd'])],
      ['d', new Set(['c'])],
    ]);
    expect(floors(toy)).toEqual({ floors: [['a'], ['b']], upward: ['c', 'd'] });
  });

  it('have no import going up: every folder stands on folders below it, and nothing below imports the pipeline', () => {
    const { floors: found, upward } = floors(graph);
    expect(upward).toEqual([]);
    expect(found.at(-1)).toEqual(['pipeline']);
  });
});
