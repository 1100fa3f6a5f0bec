/**
 * Which instances the enricher serves (the original's `Instance` predicate): every one, or those
 * matching one of a few selectors, each a label or a name pattern.
 */

/** One selector: a configuration key set to one of some values, or a name pattern. */
export type InstanceSelector =
  /** `KEY=VALUE` (or `KEY=a,b`): the instance's expanded configuration sets KEY to one of the values. */
  | { readonly kind: 'label'; readonly key: string; readonly values: readonly string[] }
  /** A glob on the instance's name: `*` any run of characters, `?` any one; the rest as written. */
  | { readonly kind: 'name'; readonly pattern: string };

/** Every instance, or those at least one selector matches. */
export type InstancesServed = { readonly mode: 'all' } | { readonly mode: 'match'; readonly selectors: readonly InstanceSelector[] };

/**
 * Parses the `instances` setting: one selector or a list of them; absent or empty, every instance.
 * A selector with `=` is a label (`user.rxfleet=1`; the key is any configuration key, `user.*`
 * being Incus's place for labels), otherwise a name pattern (`web-*`). Throws a one-line `Error`
 * for a selector that can be neither.
 */
export function parseInstancesServed(setting: string | readonly string[] | undefined): InstancesServed {
  const list = setting === undefined ? [] : typeof setting === 'string' ? [setting] : [...setting];
  if (list.length === 0) return { mode: 'all' };
  return { mode: 'match', selectors: list.map(parseSelector) };
}

function parseSelector(text: string): InstanceSelector {
  const trimmed = text.trim();
  if (trimmed === '') throw new Error('an empty selector: give KEY=VALUE or a name pattern');
  const eq = trimmed.indexOf('=');
  if (eq < 0) {
    if (/[\s/]/.test(trimmed)) throw new Error(`"${trimmed}" is not a name pattern (no spaces or slashes in an instance name)`);
    return { kind: 'name', pattern: trimmed };
  }
  const key = trimmed.slice(0, eq).trim();
  if (key === '' || /\s/.test(key)) throw new Error(`"${trimmed}": a label needs a key before "=" (e.g. user.rxfleet=1)`);
  return {
    kind: 'label',
    key,
    values: trimmed
      .slice(eq + 1)
      .split(',')
      .map((v) => v.trim()),
  };
}

const compiled = new Map<string, RegExp>();
function globMatches(pattern: string, name: string): boolean {
  let re = compiled.get(pattern);
  if (re === undefined) {
    const body = pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.');
    re = new RegExp(`^${body}$`);
    compiled.set(pattern, re);
  }
  return re.test(name);
}

/**
 * Whether an instance called `name` is served, as far as its name can tell: `true` or `false` when
 * it decides (every instance; a name pattern matched; only name patterns and none matched),
 * `undefined` when only its configuration can (a label may still match).
 */
export function servesByName(served: InstancesServed, name: string): boolean | undefined {
  if (served.mode === 'all') return true;
  let labels = false;
  for (const selector of served.selectors) {
    if (selector.kind === 'name') {
      if (globMatches(selector.pattern, name)) return true;
    } else {
      labels = true;
    }
  }
  return labels ? undefined : false;
}

/** Whether an instance called `name` with this expanded configuration is served. */
export function servesInstance(served: InstancesServed, name: string, config: Readonly<Record<string, string>>): boolean {
  if (served.mode === 'all') return true;
  return served.selectors.some((selector) =>
    selector.kind === 'name'
      ? globMatches(selector.pattern, name)
      : config[selector.key] !== undefined && selector.values.includes(config[selector.key]),
  );
}

/**
 * The predicate an instance read checks its answer with, or `undefined` when every instance is
 * served (nothing to check). Labels are matched against the expanded configuration, or the
 * instance's own when nothing is expanded.
 */
export function servesAnswer(
  served: InstancesServed,
): ((instance: { name: string; config?: Record<string, string>; expanded_config?: Record<string, string> }) => boolean) | undefined {
  if (served.mode === 'all') return undefined;
  return (instance) => {
    const expanded = instance.expanded_config;
    return servesInstance(
      served,
      instance.name,
      expanded !== undefined && Object.keys(expanded).length > 0 ? expanded : (instance.config ?? {}),
    );
  };
}
