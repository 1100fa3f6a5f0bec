/**
 * The NATS subject an enriched event is published on:
 *
 * ```
 * <prefix>.<project>.<kind>.<action>.<name>      e.g. incus.events.default.instance.instance-started.web1
 * ```
 *
 * Every token is one a consumer filters on, most general first, so each usual question is one
 * wildcard: everything about a project (`incus.events.p2.>`), every instance event
 * (`incus.events.*.instance.>`), one action fleet-wide (`incus.events.*.*.instance-started.*`),
 * everything about one instance (`incus.events.p2.instance.*.web1`). The action is kept whole
 * rather than cut after its kind, so the token is the string Incus documents and the payload carries.
 */

const RESERVED = /[.*>%\s]/g;

/**
 * A name as one subject token: `.`, `*`, `>`, whitespace and `%` are percent-encoded (a network
 * may be called `br0.100`), so a token never splits or turns into a wildcard, and decoding is
 * `decodeURIComponent`.
 */
export function subjectToken(value: string): string {
  if (value === '') return '_';
  return value.replace(RESERVED, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** The subject for an event about `name` in `project` (the prefix is used as given: it was validated with the configuration). */
export function subjectFor(prefix: string, event: { project: string; kind: string; action: string; name: string }): string {
  return [prefix, subjectToken(event.project), event.kind, subjectToken(event.action), subjectToken(event.name)].join('.');
}
