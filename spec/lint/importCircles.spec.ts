import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');
const TREES = ['index.ts', 'lib', 'streams', 'bin', 'operators'];

/** Every source file of the shipped trees (no specs, builds or dependencies). */
function sources(path: string): string[] {
  const full = join(ROOT, path);
  if (statSync(full).isFile()) return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(full)
    .filter((name) => !['node_modules', 'dist', 'spec'].includes(name))
    .flatMap((name) => sources(join(path, name)));
}

// Every relative import and re-export, `import type` included: a circle of types is still a
// circle a reader has to walk round.
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+['"](\.{1,2}\/[^'"]+)['"]/g;

/** The files `file` imports, as repository paths. */
function importsOf(file: string, known: Set<string>): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out: string[] = [];
  for (const [, spec] of text.matchAll(IMPORT)) {
    const base = relative(ROOT, resolve(ROOT, dirname(file), spec)).replace(/\.js$/, '');
    const target = [`${base}.ts`, `${base}/index.ts`].find((candidate) => known.has(candidate));
    if (target !== undefined) out.push(target);
  }
  return out;
}

/** The import graph's strongly connected components of more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(node, Math.min(low.get(node)!, index.get(to)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('the import graph', () => {
  const files = TREES.flatMap(sources);
  const known = new Set(files);
  const graph = new Map(files.map((file) => [file, importsOf(file, known)]));

  it('is read off the source: the enricher pipeline imports its owner, the owner its parts', () => {
    expect(graph.get('lib/enricher/pipeline/createEnricher.ts')).toContain('lib/enricher/owner/fleetOwner.ts');
    expect(graph.get('lib/enricher/owner/fleetOwner.ts')).toContain('lib/enricher/owner/landings.ts');
    expect(
      circles(
        new Map([
          ['a', ['b']],
          ['b', ['a']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual([['a', 'b']]);
  });

  it('has no circles in lib/, streams/, bin/ or operators/: each module can be read before the ones that use it', () => {
    expect(circles(graph)).toEqual([]);
  });
});
