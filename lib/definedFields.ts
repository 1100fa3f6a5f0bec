/** `T` with every field optional and never `undefined`: what {@link definedFields} returns. */
export type DefinedFields<T> = { [K in keyof T]?: Exclude<T[K], undefined> };

/**
 * The fields of `fields` whose value is not `undefined`, the others left out, so that an option
 * nobody set is absent rather than set to `undefined`: `{ ...defaults, ...x }` keeps a default only
 * for an absent key, `'key' in x` is false, and nats.js, Node's `tls` and `child_process` options
 * read an absent key as "not given". Written once for the spread it replaces,
 * `...(user !== undefined ? { user } : {})`:
 *
 * @example
 * const options = { servers, ...definedFields({ user, pass: password, token }) };
 */
export function definedFields<T extends Record<string, unknown>>(fields: T): DefinedFields<T> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) if (fields[key] !== undefined) out[key] = fields[key];
  return out as DefinedFields<T>;
}
