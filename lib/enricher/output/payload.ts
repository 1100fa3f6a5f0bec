/**
 * What a consumer receives: the JSON payload of an enriched event (on NATS and as a stdout line),
 * and its JSON Schema.
 */
import { EnrichedEvent, EventKind, EventOrigin } from '../model/event';
import { InstanceRecord, InterfaceRecord, NetworkRecord } from '../model/records';
import { EnrichmentName, enrichmentNames } from '../model/wanted';

/** The payload's format version; a change a consumer could trip over bumps it. */
export const PAYLOAD_VERSION = 1;

/** A network in a payload. */
export interface NetworkPayload {
  name: string;
  project: string;
  managed: boolean;
  type: string;
  ipv4: string;
  ipv6: string;
}

/** An interface in a payload. */
export interface InterfacePayload {
  name: string;
  device: string;
  project: string;
  network: string;
  managed: boolean;
  ipv4: string[];
  ipv6: string[];
}

/** An instance in a payload. */
export interface InstancePayload {
  type: string;
  status: string;
  running: boolean;
  location: string;
  profiles: string[];
  config: Record<string, string>;
  interfaces: InterfacePayload[];
  networks: Record<string, NetworkPayload>;
}

/** The JSON a consumer receives for one event. */
export interface EventPayload {
  version: typeof PAYLOAD_VERSION;
  action: string;
  kind: EventKind;
  project: string;
  name: string;
  old_name?: string;
  status: 'ok' | 'failed';
  error?: string;
  origin: EventOrigin;
  /** When the enricher took the event in (RFC 3339). */
  received: string;
  /** The server's own time, for events from Incus. */
  timestamp?: string;
  location?: string;
  enriched: EnrichmentName[];
  instance?: InstancePayload;
  network?: NetworkPayload;
  project_config?: Record<string, string>;
  /**
   * The instance's own sequence, on the JetStream output and in the state bucket only: 1, 2, 3 ...
   * for each event about the instance (its `Rxfleet-Instance-Seq` header), across restarts and
   * takeovers, so a consumer sees a gap and drops what it has seen.
   */
  instance_seq?: number;
}

function networkPayload(n: NetworkRecord): NetworkPayload {
  return { name: n.name, project: n.project, managed: n.managed, type: n.type, ipv4: n.ipv4, ipv6: n.ipv6 };
}

function interfacePayload(i: InterfaceRecord): InterfacePayload {
  return {
    name: i.name,
    device: i.device,
    project: i.project,
    network: i.network,
    managed: i.managed,
    ipv4: [...i.ipv4],
    ipv6: [...i.ipv6],
  };
}

function instancePayload(r: InstanceRecord): InstancePayload {
  return {
    type: r.type,
    status: r.status,
    running: r.running,
    location: r.location,
    profiles: [...r.profiles],
    config: { ...r.config },
    interfaces: r.interfaces.map(interfacePayload),
    networks: Object.fromEntries(Object.entries(r.networks).map(([k, n]) => [k, networkPayload(n)])),
  };
}

/**
 * The payload of an event the enricher emitted. A dropped event has no payload (the enricher
 * never emits one), so asking is a programming error.
 */
export function toPayload(event: EnrichedEvent): EventPayload {
  if (event.status === 'dropped') throw new TypeError(`a dropped event (${event.action} ${event.project}/${event.name}) has no payload`);
  const payload: EventPayload = {
    version: PAYLOAD_VERSION,
    action: event.action,
    kind: event.kind,
    project: event.project,
    name: event.name,
    status: event.status,
    origin: event.origin,
    received: new Date(event.received).toISOString(),
    enriched: enrichmentNames(event.enriched),
  };
  if (event.oldName !== undefined) payload.old_name = event.oldName;
  if (event.status === 'failed' && event.reason !== undefined) payload.error = event.reason;
  if (event.timestamp !== undefined) payload.timestamp = event.timestamp;
  if (event.location !== undefined) payload.location = event.location;
  if (event.instance !== undefined) payload.instance = instancePayload(event.instance);
  if (event.network !== undefined) payload.network = networkPayload(event.network);
  if (event.projectConfig !== undefined) payload.project_config = { ...event.projectConfig };
  return payload;
}

const stringMap = { type: 'object', additionalProperties: { type: 'string' } } as const;
const strings = { type: 'array', items: { type: 'string' } } as const;
const networkSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'project', 'managed', 'type', 'ipv4', 'ipv6'],
  properties: {
    name: { type: 'string', minLength: 1 },
    project: { type: 'string', minLength: 1 },
    managed: { type: 'boolean' },
    type: { type: 'string' },
    ipv4: { type: 'string', description: 'Configured ipv4.address of a managed network (gateway/prefix), else empty.' },
    ipv6: { type: 'string', description: 'Configured ipv6.address of a managed network (gateway/prefix), else empty.' },
  },
} as const;

/** JSON Schema (draft 2020-12) of {@link EventPayload}: what the tests validate every published message against. */
export const EVENT_PAYLOAD_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://rxfleet.dev/schemas/enriched-event-v1.json',
  title: 'rxfleet enriched Incus event',
  type: 'object',
  additionalProperties: false,
  required: ['version', 'action', 'kind', 'project', 'name', 'status', 'origin', 'received', 'enriched'],
  properties: {
    version: { const: PAYLOAD_VERSION },
    action: { type: 'string', pattern: '^[a-z]+(-[a-z]+)+$', description: 'The Incus lifecycle action.' },
    kind: { enum: ['instance', 'network', 'profile', 'project', 'other'] },
    project: { type: 'string', minLength: 1 },
    name: { type: 'string', minLength: 1 },
    old_name: { type: 'string', minLength: 1, description: 'Renames only: the name before.' },
    status: { enum: ['ok', 'failed'], description: 'failed: the subject could not be read; nothing is attached.' },
    error: { type: 'string', description: 'Who failed it, when status is failed.' },
    origin: { enum: ['incus', 'round', 'fan-out', 'repair', 'ttl', 'prune'] },
    received: { type: 'string', format: 'date-time' },
    timestamp: { type: 'string', description: 'The server timestamp (RFC 3339, variable fraction digits).' },
    location: { type: 'string' },
    enriched: { type: 'array', uniqueItems: true, items: { enum: ['instance', 'interfaces', 'network', 'project'] } },
    instance: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'status', 'running', 'location', 'profiles', 'config', 'interfaces', 'networks'],
      properties: {
        type: { type: 'string' },
        status: { type: 'string' },
        running: { type: 'boolean' },
        location: { type: 'string' },
        profiles: strings,
        config: stringMap,
        interfaces: {
          type: 'array',
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'device', 'project', 'network', 'managed', 'ipv4', 'ipv6'],
            properties: {
              name: { type: 'string' },
              device: { type: 'string' },
              project: { type: 'string', minLength: 1 },
              network: { type: 'string', minLength: 1 },
              managed: { type: 'boolean' },
              ipv4: { type: 'array', items: { type: 'string', format: 'ipv4' } },
              ipv6: { type: 'array', items: { type: 'string', format: 'ipv6' } },
            },
          },
        },
        networks: { type: 'object', additionalProperties: networkSchema },
      },
    },
    network: networkSchema,
    project_config: stringMap,
    instance_seq: {
      type: 'integer',
      minimum: 1,
      description: "JetStream output and state bucket only: the instance's own sequence, one more for each of its events.",
    },
  },
  // A failed event carries no records; an enrichment it names is there.
  allOf: [
    {
      if: { properties: { status: { const: 'failed' } } },
      then: { properties: { error: true, instance: false, network: false }, required: ['error'] },
    },
    {
      if: { properties: { enriched: { type: 'array', contains: { const: 'instance' } } } },
      then: { properties: { instance: true }, required: ['instance'] },
    },
    {
      if: { properties: { enriched: { type: 'array', contains: { const: 'network' } } } },
      then: { properties: { network: true }, required: ['network'] },
    },
    {
      if: { properties: { enriched: { type: 'array', contains: { const: 'project' } } } },
      then: { properties: { project_config: true }, required: ['project_config'] },
    },
  ],
} as const;
