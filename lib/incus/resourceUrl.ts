/** What a resource URL such as `/1.0/instances/c1?project=p2` says. */
export interface ResourceUrl {
  /** The path segments, percent-decoded: `['1.0', 'instances', 'c1']`. */
  segments: string[];
  /** The last path segment, percent-decoded; empty for an empty path. */
  name: string;
  /** The `?project=` query, if present and not empty. */
  project: string | undefined;
}

function safeDecode(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Splits a resource URL as the server writes it (in event sources and in non-recursive listings)
 * into its decoded path segments and its project. Never throws: a segment with a broken
 * percent-escape is kept as written.
 */
export function parseResourceUrl(url: string): ResourceUrl {
  const queryAt = url.indexOf('?');
  const path = queryAt < 0 ? url : url.slice(0, queryAt);
  const query = queryAt < 0 ? '' : url.slice(queryAt + 1);
  const segments = path
    .split('/')
    .filter((s) => s !== '')
    .map(safeDecode);
  // Most sources (the default project's) have no query: skip parsing one.
  const project = query === '' ? undefined : (new URLSearchParams(query).get('project') ?? undefined);
  return { segments, name: segments[segments.length - 1] ?? '', project: project === '' ? undefined : project };
}
