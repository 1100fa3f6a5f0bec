// Lists the functions longer than a limit (100 lines by default) in the given folders or files,
// longest first: `node --import tsx scripts/longFunctions.ts [--over N] [PATH...]` (default: lib,
// streams and bin). A function's length is the span of lines from its first to its last, nested
// functions included; a nested function is listed on its own as well. Used by
// spec/lint/longFunctions.spec.ts, which keeps the house's list short.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import ts from 'typescript';

/** One function (declaration, method, accessor, constructor, arrow or expression) and its span. */
export interface FunctionSpan {
  /** The repository path of its file. */
  readonly file: string;
  /** Its name as a reader would look for it: `Class.method`, `outer > inner`, or `(anonymous)`. */
  readonly name: string;
  /** The line it starts on (1-based). */
  readonly line: number;
  /** How many lines it spans, first and last included. */
  readonly lines: number;
}

const ROOT = resolve(__dirname, '..');

/** Every TypeScript source under `path` (a file or a folder), as repository paths. */
export function typeScriptFiles(path: string, root = ROOT): string[] {
  const full = join(root, path);
  if (statSync(full).isFile()) return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(full)
    .filter((name) => !['node_modules', 'dist'].includes(name))
    .sort()
    .flatMap((name) => typeScriptFiles(join(path, name), root));
}

/** The name a function goes by where it is written. */
function nameOf(node: ts.Node): string {
  const named = (n: ts.Node): string | undefined => {
    const name = (n as { name?: ts.Node }).name;
    return name !== undefined && (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isPrivateIdentifier(name))
      ? name.text
      : undefined;
  };
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const own = named(node);
  if (own !== undefined) return own;
  // An arrow or function expression takes the name of what it is assigned to or passed as.
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return named(parent) ?? '(anonymous)';
  if (ts.isCallExpression(parent)) {
    const callee = parent.expression;
    const called = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : undefined;
    return called === undefined ? '(anonymous)' : `(argument of ${called})`;
  }
  return '(anonymous)';
}

/** The functions of one source text, each with the names of the functions and classes around it. */
export function functionSpans(file: string, text: string): FunctionSpan[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const out: FunctionSpan[] = [];
  const visit = (node: ts.Node, outer: string[]): void => {
    let inside = outer;
    if (ts.isClassLike(node)) inside = [...outer, node.name?.text ?? '(class)'];
    else if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const classes =
        outer.length > 0 && ts.isClassLike(node.parent) ? `${outer.join(' > ')}.` : outer.length > 0 ? `${outer.join(' > ')} > ` : '';
      const name = `${classes}${nameOf(node)}`;
      out.push({ file, name, line: first + 1, lines: last - first + 1 });
      inside = ts.isClassLike(node.parent) ? [...outer.slice(0, -1), `${outer.at(-1)}.${nameOf(node)}`] : [...outer, nameOf(node)];
    }
    ts.forEachChild(node, (child) => visit(child, inside));
  };
  visit(source, []);
  return out;
}

/** The functions over `limit` lines in the given paths, longest first. */
export function longFunctions(paths: readonly string[], limit = 100, root = ROOT): FunctionSpan[] {
  return paths
    .flatMap((path) => typeScriptFiles(path, root))
    .flatMap((file) => functionSpans(file, readFileSync(join(root, file), 'utf8')))
    .filter((span) => span.lines > limit)
    .sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file) || a.line - b.line);
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--over');
  const limit = at === -1 ? 100 : Number(args.splice(at, 2)[1]);
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`--over wants a whole number of lines, got ${String(limit)}`);
  const paths = args.length > 0 ? args.map((path) => relative(ROOT, resolve(path))) : ['lib', 'streams', 'bin'];
  const found = longFunctions(paths, limit);
  for (const span of found) console.log(`${String(span.lines).padStart(4)}  ${span.file}:${span.line}  ${span.name}`);
  console.log(`${found.length} function${found.length === 1 ? '' : 's'} over ${limit} lines`);
}
