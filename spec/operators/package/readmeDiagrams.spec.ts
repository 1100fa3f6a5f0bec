import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The kit's README is a user's page: each operator under a heading of its own, with a diagram and
 * an example. Its diagrams are not drawn twice: each is the diagram of a doc comment, character for
 * character, and every doc comment's diagram is run by its operator's spec ("behaves as its doc
 * comment's diagram says"), so what the README shows is what the operator does. Its examples are
 * compiled as written by the packed-tarball spec.
 */

const kit = join(__dirname, '..', '..', '..', 'operators');
const readme = readFileSync(join(kit, 'README.md'), 'utf8');

/** The code blocks of a markdown text: language tag and body. */
const blocks = (markdown: string): Array<{ tag: string; body: string }> =>
  [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ tag: m[1], body: m[2] }));

/** The diagrams in the kit's doc comments: the untagged code blocks, without the comment's ` * `. */
function docDiagrams(): string[] {
  const diagrams: string[] = [];
  for (const file of readdirSync(kit).filter((f) => f.endsWith('.ts'))) {
    const source = readFileSync(join(kit, file), 'utf8');
    for (const comment of source.match(/\/\*\*[\s\S]*?\*\//g) ?? []) {
      const text = comment
        .split('\n')
        .map((line) => line.replace(/^\s*\/?\*\*? ?/, '').replace(/\s*\*\/$/, ''))
        .join('\n');
      for (const block of blocks(text)) if (block.tag === '') diagrams.push(block.body);
    }
  }
  return diagrams;
}

/** The operators the entry exports, from its first group of `export { ... } from` lines. */
function operators(): string[] {
  const entry = readFileSync(join(kit, 'index.ts'), 'utf8');
  const section = entry.slice(entry.indexOf('// The operators'), entry.indexOf('// What the operators take and give'));
  return [...section.matchAll(/^export \{ (\w+) \} from/gm)].map((m) => m[1]);
}

describe("the kit's README", () => {
  it('draws only diagrams that a doc comment draws, and so a spec runs', () => {
    const known = docDiagrams();
    const drawn = blocks(readme).filter((b) => b.tag === '');
    expect(drawn.length).toBeGreaterThanOrEqual(12);
    expect(drawn.filter((d) => !known.includes(d.body)).map((d) => d.body)).toEqual([]);
  });

  it('gives each operator a section of its own, with a diagram and an example', () => {
    const sections = readme.split(/^### /m).slice(1);
    const missing = operators().filter((name) => {
      const section = sections.find((s) => s.startsWith(`${name} `) || s.startsWith(`${name}\n`));
      if (section === undefined) return true;
      const inside = blocks(section);
      return !inside.some((b) => b.tag === '') || !inside.some((b) => b.tag === 'ts');
    });
    expect(operators()).toHaveLength(12);
    expect(missing).toEqual([]);
  });

  it('is a page for its users: the benchmark history lives in the repository docs, linked', () => {
    expect(readme).toContain('https://github.com/rxfleet/rxfleet/blob/main/docs/operators-benchmarks.md');
    expect(readme).not.toMatch(/What the profile said/);
    expect(readme.split(/\s+/).length).toBeLessThan(5000);
  });
});
