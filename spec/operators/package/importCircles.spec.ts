import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const kit = join(__dirname, '..', '..', '..', 'operators');

/** Every TypeScript source of the kit (not its build), by path relative to operators/. */
function sources(dir = kit): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'dist' || name === 'node_modules' ? [] : sources(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [relative(kit, path)] : [];
  });
}

/** The kit's own files a source imports, type-only imports included (a circle of types is a circle to a reader). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(kit, file), 'utf8');
  return [...text.matchAll(/(?:import|export)\s[^;]*?from\s+'(\.\.?\/[^']+)'/g)].map((m) =>
    relative(kit, resolve(dirname(join(kit, file)), m[1].replace(/\.js$/, '')) + '.ts'),
  );
}

/** The first circle found by a depth-first walk, as the files around it, or undefined. */
function firstCircle(graph: Map<string, string[]>): string[] | undefined {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    const at = path.indexOf(file);
    if (at >= 0) return [...path.slice(at), file];
    if (done.has(file)) return undefined;
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      const circle = visit(next);
      if (circle !== undefined) return circle;
    }
    path.pop();
    done.add(file);
    return undefined;
  };
  for (const file of graph.keys()) {
    const circle = visit(file);
    if (circle !== undefined) return circle;
  }
  return undefined;
}

describe('the kit has no import circle (issue 20)', () => {
  it('no file of operators/ reaches itself through its imports, type-only ones included', () => {
    const files = sources();
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    expect(files.length).toBeGreaterThan(25);
    // Every import resolves to a file of the kit: the walk sees the whole graph.
    expect([...graph.values()].flat().filter((target) => !graph.has(target))).toEqual([]);
    expect(firstCircle(graph)).toBeUndefined();
    // The walk finds a circle when there is one.
    expect(firstCircle(new Map([...graph, ['RingQueue.ts', ['internal/Line.ts']]]))).toEqual([
      'internal/Line.ts',
      'RingQueue.ts',
      'internal/Line.ts',
    ]);
  });
});
