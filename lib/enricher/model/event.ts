/**
 * The event that walks through the enricher and out of it: immutable, every `with*` returns a
 * new event. What the subject looks like is attached as records; what the event is (an Incus
 * event, a round's read, a repair) travels with it but is not part of its identity.
 */
import { Enrichment } from './wanted';
import { InstanceRecord, NetworkRecord, configsEqual, instancesEqual, networksEqual } from './records';

/** The entity an action happened to, from its prefix (the prefix is load-bearing: a name is only a name). */
export type EventKind = 'instance' | 'network' | 'profile' | 'project' | 'other';

/** `ok` walks with what it found; `failed` could not be read (it still goes out, so nobody loses the fact); `dropped` was superseded or refused. */
export type EventStatus = 'ok' | 'failed' | 'dropped';

/**
 * Where an event came from: `incus` (the server's event stream), `round` (a name the round
 * went over), `fan-out` (a network, profile or project change re-reading an instance), `repair`
 * (a retry after a failed read), `ttl` (a re-read after `ttl`), `prune` (an instance a listing or
 * a project no longer has).
 */
export type EventOrigin = 'incus' | 'round' | 'fan-out' | 'repair' | 'ttl' | 'prune';

/** One event. */
export interface EnrichedEvent {
  readonly action: string;
  readonly kind: EventKind;
  readonly project: string;
  /** The subject's name (for a rename, the new one). */
  readonly name: string;
  /** The old name on renames. */
  readonly oldName?: string;
  readonly status: EventStatus;
  /** Who failed or dropped it (`enricher/read`, `debounce`, ...). */
  readonly reason?: string;
  /** Bits of {@link Enrichment} actually attached. */
  readonly enriched: number;
  readonly instance?: InstanceRecord;
  readonly network?: NetworkRecord;
  /** The owning project's own configuration. Absent means "not read yet", `{}` means "sets nothing". */
  readonly projectConfig?: Readonly<Record<string, string>>;
  readonly origin: EventOrigin;
  /** When the enricher took it in (ms, on its scheduler's clock). */
  readonly received: number;
  /** The server's own timestamp, for events from Incus. */
  readonly timestamp?: string;
  /** Cluster member the server named, for events from Incus. */
  readonly location?: string;
}

/** The reason a failed read gives its events. */
export const READ_FAILED = 'enricher/read';

/** The kind an action's prefix names. */
export function kindOf(action: string): EventKind {
  const dash = action.indexOf('-');
  const prefix = dash < 0 ? action : action.slice(0, dash);
  return prefix === 'instance' || prefix === 'network' || prefix === 'profile' || prefix === 'project' ? prefix : 'other';
}

/** Fields a new event may be given. */
export interface NewEventFields {
  action: string;
  project: string;
  name: string;
  oldName?: string;
  origin: EventOrigin;
  received: number;
  timestamp?: string;
  location?: string;
}

/** A bare event: nothing attached, status `ok`. */
export function newEvent(fields: NewEventFields): EnrichedEvent {
  const event: { -readonly [K in keyof EnrichedEvent]: EnrichedEvent[K] } = {
    action: fields.action,
    kind: kindOf(fields.action),
    project: fields.project,
    name: fields.name,
    status: 'ok',
    enriched: 0,
    origin: fields.origin,
    received: fields.received,
  };
  if (fields.oldName !== undefined && fields.oldName !== '') event.oldName = fields.oldName;
  if (fields.timestamp !== undefined) event.timestamp = fields.timestamp;
  if (fields.location !== undefined) event.location = fields.location;
  return event;
}

/** The event marked failed by `reason`; an event already failed or dropped keeps its first mark. */
export function withFailed(event: EnrichedEvent, reason: string): EnrichedEvent {
  return event.status === 'ok' ? { ...event, status: 'failed', reason } : event;
}

/** The event marked dropped by `by`; an event already failed or dropped keeps its first mark. */
export function withDropped(event: EnrichedEvent, by: string): EnrichedEvent {
  return event.status === 'ok' ? { ...event, status: 'dropped', reason: by } : event;
}

/** The event with the instance attached. A record always carries complete interfaces: one that could not be placed is never stored. */
export function withInstance(event: EnrichedEvent, instance: InstanceRecord): EnrichedEvent {
  return { ...event, instance, enriched: event.enriched | Enrichment.instance | Enrichment.interfaces };
}

/** The event with the network attached (DECISIONS E8). */
export function withNetwork(event: EnrichedEvent, network: NetworkRecord): EnrichedEvent {
  return { ...event, network, enriched: event.enriched | Enrichment.network };
}

/** The event with the owning project's configuration attached. */
export function withProject(event: EnrichedEvent, config: Readonly<Record<string, string>>): EnrichedEvent {
  return { ...event, projectConfig: config, enriched: event.enriched | Enrichment.project };
}

/**
 * Structural equality about the subject: action, names, project, status (not its reason's
 * wording), which enrichments landed, and every attached record field by field.
 *
 * Structural rather than a hash, because a collision would read a real change as a repeat.
 * Left out: when it was received, the server's timestamp and cluster member, and its origin -
 * none of them is about the subject, and leaving out the origin is what lets a round's read or a
 * fan-out that found what a live event already carried stay one event. Kept on purpose: the
 * action, so a stop is never absorbed by the update before it; and the enrichment bits, because
 * "no networks" and "nobody asked for networks" are different answers.
 *
 * `ignoreAction` compares the subject alone: for an event the enricher invented, whose action is
 * its own and says nothing about what happened.
 */
export function eventsEqual(a: EnrichedEvent | undefined, b: EnrichedEvent | undefined, options: { ignoreAction?: boolean } = {}): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  return (
    (options.ignoreAction === true || a.action === b.action) &&
    a.project === b.project &&
    a.name === b.name &&
    (a.oldName ?? '') === (b.oldName ?? '') &&
    a.status === b.status &&
    a.enriched === b.enriched &&
    configsEqual(a.projectConfig, b.projectConfig) &&
    networksEqual(a.network, b.network) &&
    instancesEqual(a.instance, b.instance)
  );
}
