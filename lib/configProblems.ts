/**
 * How a problem in a configuration file is worded, for both daemons' files: key paths, what was
 * expected, a "did you mean" for a misspelt key, and values shown without secrets.
 */
import { ErrorObject } from 'ajv';
import { withoutCredentials } from './redact';

/** Levenshtein distance, for the "did you mean" of an unknown key. */
export function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

/** An ajv instance path as a configuration key path (`rxfleet.nats_servers[0]`). */
export function errorPath(e: ErrorObject): string {
  return e.instancePath
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, segment) => (/^\d+$/.test(segment) ? `${path}[${segment}]` : path === '' ? segment : `${path}.${segment}`), '');
}

/**
 * A JSON Schema as the configuration schemas write it: besides the standard keywords, `expected`
 * is the text a problem shows when a value is refused, and `secret: true` keeps a refused value
 * out of the message.
 */
export interface SchemaNode {
  expected?: string;
  secret?: boolean;
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
}

/** The node of `schema` describing the value at an ajv instance path, for its `expected` text. */
function schemaAt(schema: SchemaNode, instancePath: string): SchemaNode | undefined {
  let node: SchemaNode | undefined = schema;
  for (const segment of instancePath.split('/').slice(1)) {
    node = /^\d+$/.test(segment) ? node?.items : node?.properties?.[segment];
  }
  return node;
}

/** What an error against `schema` says: what was expected and what came, a secret's value never shown. */
export function schemaMessage(schema: SchemaNode, e: ErrorObject): string {
  const node = schemaAt(schema, e.instancePath);
  const got =
    node?.secret === true ? `a ${Array.isArray(e.data) ? 'list' : typeof e.data} (value not shown: it is a secret)` : describe(e.data);
  const expected = node?.expected ?? e.message ?? 'a valid value';
  return `expected ${expected}, got ${got}`;
}

/** A value as a problem line may show it: its kind, a string shortened and without URL credentials. */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    // A server address may carry a password: never shown.
    const shown = withoutCredentials(value);
    return `${JSON.stringify(shown.length > 60 ? `${shown.slice(0, 60)}...` : shown)} (a string)`;
  }
  return String(value);
}
