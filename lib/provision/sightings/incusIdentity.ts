/**
 * The Choria identity an Incus instance maps to: a template over the instance's name, project and
 * configuration (`rxfleet.incus.identity`), by default the instance's name, which is what a
 * Choria server inside a container reports when nothing sets its `identity` (its host name is the
 * instance's name).
 */

/** The template a feed uses when the configuration names none. */
export const DEFAULT_IDENTITY_TEMPLATE = '{name}';

/** What a template is filled from: the instance as the enriched event carries it. */
export interface IdentitySource {
  readonly name: string;
  readonly project: string;
  /** The instance's expanded configuration, as the enricher publishes it (no `volatile.*`). */
  readonly config: Readonly<Record<string, string>>;
}

/** A filled template: the identity, or why there is none. */
export type IdentityResult = { readonly ok: true; readonly identity: string } | { readonly ok: false; readonly reason: string };

/** A parsed template; {@link parseIdentityTemplate} makes one. */
export interface IdentityTemplate {
  /** As written. */
  readonly text: string;
  /** The configuration keys it reads, in order (for log lines and docs). */
  readonly configKeys: readonly string[];
  fill(source: IdentitySource): IdentityResult;
}

/** A template that cannot be used: the message names the placeholder at fault. */
export class IdentityTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IdentityTemplateError';
  }
}

type Part = { kind: 'text'; text: string } | { kind: 'name' } | { kind: 'project' } | { kind: 'config'; key: string };

// A Choria identity becomes a NATS subject token (`choria.node.<identity>`...): no white space, no
// wildcard, no empty token.
const INVALID_IDENTITY = /[\s*>{}]|^\.|\.$|\.\./;

/**
 * Parses a template: text with `{name}`, `{project}` and `{config.KEY}` (a key of the instance's
 * expanded configuration, `{config.user.choria-identity}`) in it, e.g. `{name}.{project}.example.net`.
 * Throws {@link IdentityTemplateError} for an empty template, an unknown placeholder, a brace
 * without its pair, or text no identity may hold (white space, `*`, `>`).
 */
export function parseIdentityTemplate(text: string): IdentityTemplate {
  if (text.trim() === '') throw new IdentityTemplateError('an empty template: give e.g. {name} or {name}.example.net');
  const parts: Part[] = [];
  let at = 0;
  while (at < text.length) {
    const open = text.indexOf('{', at);
    const close = text.indexOf('}', at);
    if (close >= 0 && (open < 0 || close < open)) throw new IdentityTemplateError(`"}" without "{" at character ${close + 1}`);
    if (open < 0) {
      parts.push({ kind: 'text', text: text.slice(at) });
      break;
    }
    if (open > at) parts.push({ kind: 'text', text: text.slice(at, open) });
    const end = text.indexOf('}', open);
    if (end < 0) throw new IdentityTemplateError(`"{" without "}" at character ${open + 1}`);
    const placeholder = text.slice(open + 1, end).trim();
    if (placeholder === 'name') parts.push({ kind: 'name' });
    else if (placeholder === 'project') parts.push({ kind: 'project' });
    else if (placeholder.startsWith('config.') && placeholder.length > 'config.'.length && !/[\s{]/.test(placeholder))
      parts.push({ kind: 'config', key: placeholder.slice('config.'.length) });
    else throw new IdentityTemplateError(`unknown placeholder {${placeholder}}: use {name}, {project} or {config.KEY}`);
    at = end + 1;
  }
  const literal = parts.flatMap((p) => (p.kind === 'text' ? [p.text] : [])).join('');
  if (/[\s*>]/.test(literal)) throw new IdentityTemplateError('a Choria identity holds no white space, "*" or ">"');
  const configKeys = parts.flatMap((p) => (p.kind === 'config' ? [p.key] : []));
  return {
    text,
    configKeys,
    fill(source: IdentitySource): IdentityResult {
      let identity = '';
      for (const part of parts) {
        if (part.kind === 'text') identity += part.text;
        else if (part.kind === 'name') identity += source.name;
        else if (part.kind === 'project') identity += source.project;
        else {
          const value = source.config[part.key];
          if (value === undefined || value === '') return { ok: false, reason: `its configuration has no ${part.key}` };
          identity += value;
        }
      }
      if (INVALID_IDENTITY.test(identity))
        return {
          ok: false,
          reason: `${JSON.stringify(identity)} is not a Choria identity (no white space, "*", ">", braces or empty dotted parts)`,
        };
      return { ok: true, identity };
    },
  };
}
