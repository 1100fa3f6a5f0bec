/**
 * `cert_deny_list`: regular expressions that a CSR's common name and DNS names must not match, so a
 * node cannot obtain a certificate named like a Choria client (`bob.choria`, `bob.mcollective`).
 */

/** Upstream's default, used when the configured list is empty (`config.Load`). */
export const DEFAULT_CERT_DENY_LIST: readonly string[] = [
  '\\.privileged.mcollective$',
  '\\.privileged.choria$',
  '\\.mcollective$',
  '\\.choria$',
];

/** A deny-list entry that is not a regular expression; the message says why. */
export class DenyPatternError extends Error {
  constructor(
    readonly pattern: string,
    reason: string,
  ) {
    super(`invalid pattern ${JSON.stringify(pattern)}: ${reason}`);
    this.name = 'DenyPatternError';
  }
}

const POSIX_CLASSES: Record<string, string> = {
  alnum: '0-9A-Za-z',
  alpha: 'A-Za-z',
  ascii: '\\x00-\\x7F',
  blank: '\\t ',
  cntrl: '\\x00-\\x1F\\x7F',
  digit: '0-9',
  graph: '!-~',
  lower: 'a-z',
  print: ' -~',
  punct: '!-\\/:-@\\[-`{-~',
  space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z',
  word: '0-9A-Za-z_',
  xdigit: '0-9A-Fa-f',
};

/**
 * Compiles one entry the way upstream reads it: an entry written `/re/` has its slashes stripped,
 * then it is a Go (RE2) regular expression matched anywhere in the name. RE2 syntax JavaScript lacks
 * is translated: leading `(?i)`/`(?s)`/`(?m)` flags, `(?P<name>`, `\A`, `\z` and `[[:class:]]`.
 * Throws {@link DenyPatternError} for anything JavaScript cannot compile (where Go would silently
 * never match, rxfleet refuses the configuration).
 */
export function compileDenyPattern(entry: string): RegExp {
  let source = /^\/.+\/$/.test(entry) ? entry.replace(/^\/+/, '').replace(/\/+$/, '') : entry;
  let flags = '';
  const inline = /^\(\?([a-zA-Z]+)\)/.exec(source);
  if (inline !== null) {
    for (const flag of inline[1]) {
      if (!'ism'.includes(flag)) throw new DenyPatternError(entry, `flag ${flag} is not supported`);
      if (!flags.includes(flag)) flags += flag;
    }
    source = source.slice(inline[0].length);
  }
  source = source
    .replace(/\(\?P</g, '(?<')
    .replace(/\\A/g, '^')
    .replace(/\\z/g, '$')
    .replace(/\[:(\^?)([a-z]+):\]/g, (whole, negate: string, name: string) => {
      const chars = POSIX_CLASSES[name];
      if (chars === undefined) return whole;
      // Negated POSIX classes only occur alone in practice: [[:^digit:]].
      return negate === '' ? chars : `^${chars}`;
    });
  try {
    return new RegExp(source, flags);
  } catch (error) {
    throw new DenyPatternError(entry, (error as Error).message.replace(/^Invalid regular expression: /, ''));
  }
}

/**
 * A compiled deny list. An empty list means upstream's {@link DEFAULT_CERT_DENY_LIST}. Throws
 * {@link DenyPatternError} for the first entry that does not compile.
 */
export class CertDenyList {
  private readonly compiled: { entry: string; re: RegExp }[];

  constructor(entries: readonly string[] = []) {
    const list = entries.length === 0 ? DEFAULT_CERT_DENY_LIST : entries;
    this.compiled = list.map((entry) => ({ entry, re: compileDenyPattern(entry) }));
  }

  /** The entries in force, after defaulting. */
  get entries(): string[] {
    return this.compiled.map((c) => c.entry);
  }

  /** The first entry `name` matches, or `undefined` when it is allowed. */
  match(name: string): string | undefined {
    return this.compiled.find((c) => c.re.test(name))?.entry;
  }
}
