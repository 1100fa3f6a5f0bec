import { isTrue } from './records';

/**
 * Which projects the enricher serves: every one, a fixed list, or those whose configuration
 * carries a marker (`user.enrich=yes`, or a bare key meaning "is true"; the value may be a comma
 * list of accepted values).
 */
export type ProjectsServed =
  { mode: 'all' } | { mode: 'list'; names: readonly string[] } | { mode: 'marker'; key: string; values: readonly string[] | 'true' };

/** Parses the `projects` setting: a list of names, or a `key=value` marker string. */
export function parseProjectsServed(setting: readonly string[] | string | undefined): ProjectsServed {
  if (setting === undefined) return { mode: 'all' };
  if (Array.isArray(setting)) return setting.length === 0 ? { mode: 'all' } : { mode: 'list', names: [...setting] };
  const marker = (setting as string).trim();
  if (marker === '') return { mode: 'all' };
  const eq = marker.indexOf('=');
  if (eq < 0) return { mode: 'marker', key: marker, values: 'true' };
  return {
    mode: 'marker',
    key: marker.slice(0, eq).trim(),
    values: marker
      .slice(eq + 1)
      .split(',')
      .map((v) => v.trim()),
  };
}

/**
 * Whether `project` is served, as far as can be told without reading it: `true` or `false` when
 * the setting alone decides (all, list), `undefined` when only its configuration can.
 */
export function servedByName(served: ProjectsServed, project: string): boolean | undefined {
  if (served.mode === 'all') return true;
  if (served.mode === 'list') return served.names.includes(project);
  return undefined;
}

/** Whether a project with this configuration is served. */
export function servedByConfig(served: ProjectsServed, project: string, config: Readonly<Record<string, string>>): boolean {
  const byName = servedByName(served, project);
  if (byName !== undefined || served.mode !== 'marker') return byName ?? true;
  const value = config[served.key];
  if (served.values === 'true') return isTrue(value);
  return value !== undefined && served.values.includes(value);
}
