import { parse } from 'shell-quote';

/** A helper command line that cannot be split; the message is upstream's. */
export class HelperCommandError extends Error {
  constructor(reason: string) {
    super(`cannot parse helper command: ${reason}`);
    this.name = 'HelperCommandError';
  }
}

// Outside quotes, shell-quote reads these as operators, globs, comments or variables (and `$` and
// a backtick inside double quotes too); go-shellquote, what upstream splits with, reads them as
// ordinary characters. They travel through shell-quote as private-use placeholders.
const LITERAL_UNQUOTED = new Set(['$', '#', '|', '&', ';', '<', '>', '(', ')', '*', '?', '[', ']', '{', '}', '!', '`', '~', '=']);
const PLACEHOLDER_BASE = 0xe000;
const placeholder = (ch: string): string => String.fromCharCode(PLACEHOLDER_BASE + ch.charCodeAt(0));
const PLACEHOLDERS = /[\ue000-\ue07f]/g;
const HAS_PLACEHOLDER = /[\ue000-\ue07f]/;

/**
 * Splits `helper` into the executable and its arguments the way upstream does since #214
 * (go-shellquote): POSIX word splitting with single quotes, double quotes and backslash escapes
 * (a backslash-newline joins lines), and no expansion of any kind (`$HOME`, `*`, `~` and `a|b`
 * stay as written; nothing is a shell operator). shell-quote does the splitting; a first pass finds
 * unterminated quoting, which upstream refuses, and hides from shell-quote the characters it would
 * otherwise interpret.
 *
 * Throws {@link HelperCommandError}: `cannot parse helper command: empty`, or
 * `...: Unterminated single-quoted string` / `double-quoted string` / `backslash-escape`.
 */
export function splitHelperCommand(command: string): string[] {
  if (HAS_PLACEHOLDER.test(command)) throw new HelperCommandError('private-use characters U+E000 to U+E07F are not supported');
  let escaped = '';
  let state: 'plain' | 'single' | 'double' = 'plain';
  for (let i = 0; i < command.length; i++) {
    const ch = command[i];
    if (state === 'single') {
      escaped += ch;
      if (ch === "'") state = 'plain';
    } else if (state === 'double') {
      if (ch === '\\') {
        if (i + 1 >= command.length) throw new HelperCommandError('Unterminated double-quoted string');
        const next = command[i + 1];
        // Inside double quotes only these are escapes; any other backslash is a literal one.
        if (next === '\n') escaped += '';
        else if (next === '$' || next === '`') escaped += placeholder(next);
        else if (next === '"' || next === '\\') escaped += `\\${next}`;
        else escaped += '\\\\';
        if ('$`"\\\n'.includes(next)) i++;
      } else if (ch === '$' || ch === '`') {
        escaped += placeholder(ch);
      } else {
        escaped += ch;
        if (ch === '"') state = 'plain';
      }
    } else if (ch === '\\') {
      if (i + 1 >= command.length) throw new HelperCommandError('Unterminated backslash-escape');
      const next = command[i + 1];
      escaped += next === '\n' ? '' : LITERAL_UNQUOTED.has(next) ? placeholder(next) : `\\${next}`;
      i++;
    } else {
      if (ch === "'") state = 'single';
      if (ch === '"') state = 'double';
      escaped += LITERAL_UNQUOTED.has(ch) ? placeholder(ch) : ch;
    }
  }
  if (state === 'single') throw new HelperCommandError('Unterminated single-quoted string');
  if (state === 'double') throw new HelperCommandError('Unterminated double-quoted string');

  const words = parse(escaped, (name) => `$${name}`);
  if (words.length === 0) throw new HelperCommandError('empty');
  return words.map((word) => {
    // Unreachable after escaping; a clear error beats running the wrong command if it ever is not.
    if (typeof word !== 'string') throw new HelperCommandError(`unexpected shell syntax ${JSON.stringify(word)}`);
    return word.replace(PLACEHOLDERS, (p) => String.fromCharCode(p.charCodeAt(0) - PLACEHOLDER_BASE));
  });
}
