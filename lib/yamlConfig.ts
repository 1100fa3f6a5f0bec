import { Document, ErrorCode, LineCounter, Node, Pair, isAlias, isMap, isScalar, isSeq, parseDocument } from 'yaml';

/** One problem of a YAML configuration text: the key's path (`rxfleet.nats_password`, `''` for the file) and what is wrong. */
export interface YamlProblem {
  path: string;
  message: string;
}

/** Options for {@link readYamlConfig}. */
export interface ReadYamlOptions {
  /** `1.1` (go-yaml v2's, the provisioner's) or `1.2` (the default). */
  version?: '1.1' | '1.2';
  /** Merge keys (`<<`). Default true with 1.1, false with 1.2. */
  merge?: boolean;
  /** Aliased values the text may expand to, at most. Default 100, yaml's own limit. */
  maxAliasCount?: number;
  /**
   * Which key paths hold secrets: a problem inside one names that key and nothing below it (a
   * secret written as `token: s3cret: x` would otherwise become a key in the problem's path).
   */
  secret?: (path: string) => boolean;
}

// Our words for yaml's error codes: yaml's own messages often quote the text, which may be a secret.
const CODE_MESSAGES: Record<ErrorCode, string> = {
  ALIAS_PROPS: 'an alias cannot have an anchor or a tag',
  BAD_ALIAS: 'an alias is not well formed',
  BAD_DIRECTIVE: 'a directive is not well formed',
  BAD_DQ_ESCAPE: 'a double-quoted string has an invalid escape',
  BAD_INDENT: 'the indentation is wrong',
  BAD_PROP_ORDER: 'an anchor or tag is out of place',
  BAD_SCALAR_START: 'a plain value cannot start with this character (quote it)',
  BLOCK_AS_IMPLICIT_KEY: 'a block cannot be a key',
  BLOCK_IN_FLOW: 'a block cannot be inside a flow collection',
  DUPLICATE_KEY: 'a key is given twice',
  IMPOSSIBLE: 'the text cannot be parsed',
  KEY_OVER_1024_CHARS: 'a key is longer than 1024 characters',
  MISSING_CHAR: 'a character is missing (a closing quote, bracket, comma or colon)',
  MULTILINE_IMPLICIT_KEY: 'a key spans lines',
  MULTIPLE_ANCHORS: 'a value has more than one anchor',
  MULTIPLE_DOCS: 'the file holds more than one document',
  MULTIPLE_TAGS: 'a value has more than one tag',
  NON_STRING_KEY: 'a key is not a string',
  RESOURCE_EXHAUSTION: 'nested too deeply, or too large, for a configuration',
  TAB_AS_INDENT: 'a tab is used for indentation',
  TAG_RESOLVE_FAILED: 'a tag cannot be resolved',
  UNEXPECTED_TOKEN: 'unexpected text',
  BAD_COLLECTION_TYPE: 'a tag does not fit its collection',
};

/**
 * Reads a YAML configuration text into plain values, or says what is wrong with it, without ever
 * throwing and without ever quoting the text: each problem names the key's path where one can be
 * found (the pair around the error's position; for an alias or merge that cannot be resolved, the
 * key whose value needs it) and a line and column, in words of its own, because yaml's messages
 * quote the source (`Unresolved alias ...: <the unquoted token>`). Alias bombs are refused past
 * `maxAliasCount` expansions.
 *
 * `value` is set exactly when `problems` is empty (`null` for an empty text).
 */
export function readYamlConfig(text: string, options: ReadYamlOptions = {}): { value?: unknown; problems: YamlProblem[] } {
  const version = options.version ?? '1.2';
  const maxAliasCount = options.maxAliasCount ?? 100;
  const isSecret = options.secret ?? (() => false);
  const lines = new LineCounter();
  let document: Document.Parsed;
  try {
    // logLevel silent: yaml's warnings go to the process's stderr and quote the text.
    document = parseDocument(text, {
      version,
      merge: options.merge ?? version === '1.1',
      prettyErrors: false,
      lineCounter: lines,
      uniqueKeys: true,
      logLevel: 'silent',
    });
  } catch (error) {
    return { problems: [{ path: '', message: `not valid YAML: ${describeThrown(error)}` }] };
  }
  if (document.errors.length > 0) {
    const all = document.errors.map((e) => {
      const { line, col } = lines.linePos(e.pos[0]);
      const path = shorten(keyPathAt(document.contents, e.pos[0], '', isSecret));
      // yaml places an over-indented line's error on the key above it: name the line that is wrong.
      const over = e.code === 'BLOCK_AS_IMPLICIT_KEY' || e.code === 'MULTILINE_IMPLICIT_KEY' ? overIndentedLine(text, line) : undefined;
      if (over !== undefined)
        return {
          path,
          message: `not valid YAML at line ${over.line}, column ${over.col}: the line is indented more than line ${line} above it (a key must line up with the keys beside it)`,
        };
      return { path, message: `not valid YAML at line ${line}, column ${col}: ${CODE_MESSAGES[e.code] ?? 'the text cannot be parsed'}` };
    });
    const unique = all.filter((p, i) => all.findIndex((q) => q.path === p.path && q.message === p.message) === i);
    const problems = unique.slice(0, MAX_PROBLEMS);
    const more = unique.length - problems.length;
    if (more > 0) problems.push({ path: '', message: `not valid YAML: ${more} more problem${more === 1 ? '' : 's'} after these` });
    return { problems };
  }
  try {
    return { value: document.toJS({ maxAliasCount }), problems: [] };
  } catch (error) {
    const culprit = findCulprit(document, document.contents, '', maxAliasCount, isSecret) ?? { path: '', error };
    const start = culprit.node?.range?.[0];
    const at = start === undefined ? '' : ` (line ${lines.linePos(start).line})`;
    return { problems: [{ path: shorten(culprit.path), message: `not valid YAML${at}: ${describeThrown(culprit.error)}` }] };
  }
}

/**
 * The first line after `line` (1-based) indented deeper than it, skipping blank and comment
 * lines, when the very next such line is: the line a misplaced indentation is on.
 */
function overIndentedLine(text: string, line: number): { line: number; col: number } | undefined {
  const rows = text.split(/\r?\n/);
  const indent = (row: string): number => row.length - row.trimStart().length;
  const base = indent(rows[line - 1] ?? '');
  for (let i = line; i < rows.length; i++) {
    const row = rows[i];
    if (row.trim() === '' || row.trim().startsWith('#')) continue;
    return indent(row) > base ? { line: i + 1, col: indent(row) + 1 } : undefined;
  }
  return undefined;
}

/** What a configuration key looks like; anything else is not shown in a path. */
const KEY_NAME = /^[A-Za-z0-9_.<-]{1,64}$/;

/** The most problems one text reports: the rest are counted. */
const MAX_PROBLEMS = 10;

/** A key path short enough for one line. */
function shorten(path: string): string {
  return path.length <= 120 ? path : `${path.slice(0, 117)}...`;
}

/** What went wrong converting a document, in our words (never the thrown message, which quotes the text). */
function describeThrown(error: unknown): string {
  const message = error instanceof Error ? error.message : '';
  if (/excessive alias count/i.test(message)) return 'too many aliases: refused as a resource exhaustion attack (an alias bomb)';
  if (/unresolved alias/i.test(message))
    return 'an alias (*name) names no anchor (&name) defined before it; a value starting with * must be quoted';
  if (/merge sources/i.test(message)) return 'a merge key (<<) must name a mapping or a list of mappings';
  if (/maximum call stack/i.test(message)) return 'nested too deeply';
  return `cannot be converted (${error instanceof Error ? error.name : typeof error})`;
}

/** The dotted path (`a.b[2].c`) of the innermost key whose pair (or item) holds `offset`. */
function keyPathAt(node: unknown, offset: number, path: string, isSecret: (path: string) => boolean): string {
  if (path !== '' && isSecret(path)) return path;
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = keyName(pair);
      const start = (pair.key as Node | null)?.range?.[0] ?? (pair.value as Node | null)?.range?.[0];
      const end = (pair.value as Node | null)?.range?.[2] ?? (pair.key as Node | null)?.range?.[2];
      if (start === undefined || end === undefined || offset < start || offset > end) continue;
      // In a text that does not parse, a value may have been taken for a key: only a name is shown.
      if (key === undefined || !KEY_NAME.test(key)) return path;
      return keyPathAt(pair.value, offset, join(path, key), isSecret);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => {
      const range = (item as Node | null)?.range;
      if (range !== undefined && range !== null && offset >= range[0] && offset <= range[2])
        path = keyPathAt(item, offset, `${path}[${i}]`, isSecret);
    });
  }
  return path;
}

/**
 * The innermost key whose value cannot be converted alone, and why. A merge key whose source is
 * not a mapping is found by looking (converting it alone would not fail).
 */
function findCulprit(
  document: Document.Parsed,
  node: unknown,
  path: string,
  maxAliasCount: number,
  isSecret: (path: string) => boolean,
): { path: string; error: unknown; node?: Node } | undefined {
  if (path !== '' && isSecret(path)) return undefined;
  const children: [string, unknown][] = [];
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = keyName(pair);
      if (key === '<<' && isBadMergeSource(document, pair.value))
        return { path: join(path, '<<'), error: new Error('Merge sources must be maps'), node: pair.value as Node };
      if (key === undefined || !KEY_NAME.test(key)) continue;
      children.push([join(path, key), pair.value]);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => children.push([`${path}[${i}]`, item]));
  }
  for (const [childPath, child] of children) {
    const failure = convertAlone(document, child, maxAliasCount);
    if (failure === undefined) continue;
    return (
      findCulprit(document, isAlias(child) ? undefined : child, childPath, maxAliasCount, isSecret) ?? {
        path: childPath,
        error: failure,
        node: child as Node,
      }
    );
  }
  return undefined;
}

function convertAlone(document: Document.Parsed, node: unknown, maxAliasCount: number): unknown {
  if (node === null || typeof node !== 'object' || !('toJS' in node)) return undefined;
  try {
    (node as Node).toJS(document, { maxAliasCount });
    return undefined;
  } catch (error) {
    return error;
  }
}

function isBadMergeSource(document: Document.Parsed, value: unknown): boolean {
  const source = isAlias(value) ? value.resolve(document) : value;
  if (isMap(source)) return false;
  if (isSeq(source)) return source.items.some((item) => !isMap(isAlias(item) ? item.resolve(document) : item));
  return true;
}

function keyName(pair: Pair): string | undefined {
  const key = pair.key;
  // A merge key's value is yaml's own symbol; its source is what the user wrote.
  if (isScalar(key)) return typeof key.value === 'symbol' ? (key.source ?? '<<') : String(key.value);
  return key === null || key === undefined ? undefined : '(a complex key)';
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}
