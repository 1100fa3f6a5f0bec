import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

// The documentation's links stay true: every relative link in the README, the operator kit's README
// and docs/ names a file that exists and, with an anchor, a heading that file has (GitHub's anchors);
// every page under docs/ is reachable from the index, docs/README.md; and every docs/ path a
// source comment, an example or a message names exists.
const root = resolve(__dirname, '../..');

function markdownFiles(): string[] {
  const docs = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.md'))
    .map((name) => join('docs', name));
  return ['README.md', join('operators', 'README.md'), ...docs].sort();
}

/** The lines outside fenced code blocks, with their numbers. */
function proseLines(text: string): Array<{ line: string; number: number }> {
  const out: Array<{ line: string; number: number }> = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, index) => {
    const marker = /^\s*(```|~~~)/.exec(line)?.[1];
    if (marker !== undefined && (fence === undefined || fence === marker)) {
      fence = fence === undefined ? marker : undefined;
      return;
    }
    if (fence === undefined) out.push({ line, number: index + 1 });
  });
  return out;
}

/**
 * GitHub's anchor for a heading: its text as rendered (inline code and links reduced to their
 * text), lowercased, every character but letters, digits, marks, spaces, `-` and `_` dropped, each
 * space a `-`; a repeated anchor gets `-1`, `-2`, ...
 */
function githubSlug(heading: string): string {
  return heading
    .trim()
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N} _-]/gu, '')
    .replace(/ /g, '-');
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (anchors === undefined) {
    anchors = new Set();
    const seen = new Map<string, number>();
    for (const { line } of proseLines(readFileSync(file, 'utf8'))) {
      const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
      if (heading === undefined) continue;
      const slug = githubSlug(heading);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.add(n === 0 ? slug : `${slug}-${n}`);
    }
    anchorCache.set(file, anchors);
  }
  return anchors;
}

interface Link {
  file: string;
  number: number;
  target: string;
}

/** Inline links' targets (a label may run over several lines; its target is on one). */
function linksIn(file: string): Link[] {
  const links: Link[] = [];
  for (const { line, number } of proseLines(readFileSync(join(root, file), 'utf8'))) {
    const withoutCode = line.replace(/`[^`]*`/g, (span) => (span.includes('](') ? '' : span));
    for (const match of withoutCode.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      links.push({ file, number, target: match[1] });
    }
  }
  return links;
}

/** What is wrong with a relative link, or undefined when it resolves. */
function problem(link: Link): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link.target)) return undefined;
  const [path, anchor] = link.target.split('#', 2) as [string, string | undefined];
  const target = path === '' ? join(root, link.file) : resolve(root, dirname(link.file), decodeURIComponent(path));
  if (!existsSync(target)) return `${relative(root, target)} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!target.endsWith('.md') || statSync(target).isDirectory()) return `an anchor on ${relative(root, target)}, which is not a page`;
  if (!anchorsOf(target).has(decodeURIComponent(anchor))) return `${relative(root, target)} has no heading #${anchor}`;
  return undefined;
}

describe('the documentation', () => {
  const files = markdownFiles();

  it('has the anchors GitHub makes', () => {
    expect(githubSlug('`rxfleet demo --incus`')).toBe('rxfleet-demo---incus');
    expect(githubSlug("rxfleet's own keys: the `rxfleet:` section")).toBe('rxfleets-own-keys-the-rxfleet-section');
    expect(githubSlug('The persistent helper (`rxfleet.helper_mode: persistent`, P17)')).toBe(
      'the-persistent-helper-rxfleethelper_mode-persistent-p17',
    );
    expect(githubSlug('Benchmark: provisioning (`npm run bench:provision`)')).toBe('benchmark-provisioning-npm-run-benchprovision');
  });

  it.each(files)('%s: every relative link and anchor resolves', (file) => {
    const broken = linksIn(file)
      .map((link) => ({ link, why: problem(link) }))
      .filter(({ why }) => why !== undefined)
      .map(({ link, why }) => `${link.file}:${link.number}: (${link.target}): ${why}`);
    expect(broken).toEqual([]);
  });

  it('links every page under docs/ from the index, docs/README.md', () => {
    const linked = new Set(
      linksIn(join('docs', 'README.md'))
        .filter((link) => !/^[a-z][a-z0-9+.-]*:/i.test(link.target))
        .map((link) => relative(root, resolve(root, 'docs', link.target.split('#')[0]))),
    );
    const pages = files.filter((file) => file.startsWith('docs') && file !== join('docs', 'README.md'));
    expect(pages.filter((page) => !linked.has(page))).toEqual([]);
  });

  it('names only docs/ pages and anchors that exist, in the sources, examples and pages', () => {
    const sources = ['bin', 'lib', 'streams', 'spec', 'bench', 'examples', 'scripts', 'operators']
      .flatMap((dir) =>
        readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
          .filter((name) => !name.split('/').includes('node_modules') && !name.split('/').includes('dist'))
          .map((name) => join(dir, name)),
      )
      .filter((file) => statSync(join(root, file)).isFile() && /\.(ts|mjs|cjs|js|sh|ya?ml|service|json|md)$/.test(file))
      .filter((file) => file !== relative(root, __filename));
    const broken: string[] = [];
    for (const file of [...sources, 'index.ts', ...files]) {
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .forEach((line, index) => {
          for (const match of line.matchAll(/(?<![\w/.-])docs\/[\w./-]*\.md(?:#[\w-]+)?/g)) {
            const why = problem({ file: '.', number: index + 1, target: match[0] });
            if (why !== undefined) broken.push(`${file}:${index + 1}: ${match[0]}: ${why}`);
          }
        });
    }
    expect(broken).toEqual([]);
  });
});
