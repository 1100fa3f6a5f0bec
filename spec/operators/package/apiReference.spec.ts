import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/**
 * The kit's API reference: typedoc builds it from the doc comments with the kit's own options
 * (operators/typedoc.json: `validation.notDocumented`, `treatWarningsAsErrors`), so an exported
 * name without a doc comment fails the build, with the README as its front page and every export in
 * a group by what it is (operators, cores, options, errors...). `npm run docs -w @rxfleet/operators`
 * writes it to operators/dist/api, which the package's `files` leave out.
 */

const root = join(__dirname, '..', '..', '..');
const kit = join(root, 'operators');
const typedoc = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc');

async function runTypedoc(options: string, args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [typedoc, '--options', options, ...args], {
      cwd: kit,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? 1, output: `${failure.stdout ?? ''}${failure.stderr ?? ''}` };
  }
}

/** The names an entry file exports, values and types, as listed in its `export { ... } from` lines. */
function exportedNames(entry: string): string[] {
  const text = readFileSync(entry, 'utf8');
  return [...text.matchAll(/^export (?:type )?\{([^}]+)\} from/gm)].flatMap((m) => m[1].split(',').map((name) => name.trim())).sort();
}

describe("the kit's API reference (typedoc)", () => {
  let scratch: string;

  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), 'rxfleet-kit-api-'));
  });

  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('builds from the doc comments with no warning, with a documented entry for every name the kit exports', async () => {
    const json = join(scratch, 'api.json');
    const { code, output } = await runTypedoc(join(kit, 'typedoc.json'), ['--out', join(scratch, 'html'), '--json', json]);
    expect([code, output.match(/warning|error/gi) ?? []]).toEqual([0, []]);
    const project = JSON.parse(readFileSync(json, 'utf8')) as {
      readme?: unknown[];
      children: Array<{
        name: string;
        children?: Array<{ id: number; name: string }>;
        groups?: Array<{ title: string; children: number[] }>;
      }>;
    };
    const module = (name: string): (typeof project.children)[number] | undefined => project.children.find((c) => c.name === name);
    // A deprecated class keeps its old name as a value and as a type: one name, two entries.
    const documented = (name: string): string[] => [...new Set((module(name)?.children ?? []).map((c) => c.name))].sort();
    expect(documented('index')).toEqual(exportedNames(join(kit, 'index.ts')));
    expect(documented('testing')).toEqual(exportedNames(join(kit, 'testing', 'index.ts')));
    // The README is the reference's front page, and every export is in a group by what it is.
    expect(project.readme?.length ?? 0).toBeGreaterThan(0);
    const groups = (name: string): Record<string, string[]> => {
      const byId = new Map((module(name)?.children ?? []).map((c) => [c.id, c.name]));
      return Object.fromEntries((module(name)?.groups ?? []).map((g) => [g.title, g.children.map((id) => byId.get(id) as string).sort()]));
    };
    const index = groups('index');
    expect(Object.keys(index)).toEqual([
      'Operators',
      'Observable factories',
      'Cores',
      'What the operators take and give',
      'Options',
      'Errors',
      'Deprecated',
    ]);
    expect(index.Operators).toEqual(
      [
        'admit',
        'collectUntilIdle',
        'debounceByKey',
        'pauseWhen',
        'readPerKey',
        'releaseInOrder',
        'retryLadder',
        'splitLines',
        'withSlot',
        'workerPool',
      ].sort(),
    );
    expect(index['Observable factories']).toEqual(['fromAbortable', 'pacedSweep']);
    expect(Object.keys(groups('testing'))).toEqual(['Testing']);
  }, 180_000);

  it('fails on an exported name without a doc comment', async () => {
    writeFileSync(join(scratch, 'probe.ts'), '/** Documented. */\nexport const documented = 1;\nexport const undocumented = 2;\n');
    writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, types: [] }, files: ['probe.ts'] }));
    // The kit's options, unchanged, on a probe of one documented and one undocumented export.
    writeFileSync(
      join(scratch, 'typedoc.json'),
      JSON.stringify({
        extends: [join(kit, 'typedoc.json')],
        name: 'probe',
        entryPoints: ['probe.ts'],
        tsconfig: 'tsconfig.json',
        out: 'probe',
      }),
    );
    const { code, output } = await runTypedoc(join(scratch, 'typedoc.json'), []);
    expect(code).not.toBe(0);
    expect(output).toMatch(/undocumented \(Variable\).*does not have any documentation/);
    expect(output).not.toMatch(/\bdocumented \(Variable\)/);
  }, 180_000);
});
