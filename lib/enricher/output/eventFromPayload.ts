/**
 * The other way round of `toPayload`: an event as a consumer received it, back into the event the
 * enricher would have sent, so that what consumers were last told (the state bucket, the stream)
 * can seed the archive and the model of an enricher that starts or takes over.
 */
import { EnrichedEvent, EventOrigin, kindOf } from '../model/event';
import { InstanceRecord, NetworkRecord } from '../model/records';
import { enrichmentBits } from '../model/wanted';
import { EventPayload, InstancePayload, NetworkPayload } from './payload';

function networkRecord(n: NetworkPayload): NetworkRecord {
  return { name: n.name, project: n.project, managed: n.managed, type: n.type, ipv4: n.ipv4, ipv6: n.ipv6 };
}

/** The instance record a payload carries. */
export function instanceRecord(i: InstancePayload): InstanceRecord {
  return {
    type: i.type,
    status: i.status,
    running: i.running,
    location: i.location,
    profiles: [...i.profiles],
    config: { ...i.config },
    interfaces: i.interfaces.map((n) => ({ ...n, ipv4: [...n.ipv4], ipv6: [...n.ipv6] })),
    networks: Object.fromEntries(Object.entries(i.networks).map(([k, n]) => [k, networkRecord(n)])),
  };
}

/**
 * The event `payload` describes: every field `toPayload` writes, read back (`received` as a time
 * on the wall clock). `toPayload(eventFromPayload(p))` is `p` without `instance_seq`.
 */
export function eventFromPayload(payload: EventPayload): EnrichedEvent {
  const event: { -readonly [K in keyof EnrichedEvent]: EnrichedEvent[K] } = {
    action: payload.action,
    kind: kindOf(payload.action),
    project: payload.project,
    name: payload.name,
    status: payload.status,
    enriched: enrichmentBits(payload.enriched),
    origin: payload.origin as EventOrigin,
    received: Date.parse(payload.received),
  };
  if (payload.old_name !== undefined) event.oldName = payload.old_name;
  if (payload.error !== undefined) event.reason = payload.error;
  if (payload.timestamp !== undefined) event.timestamp = payload.timestamp;
  if (payload.location !== undefined) event.location = payload.location;
  if (payload.instance !== undefined) event.instance = instanceRecord(payload.instance);
  if (payload.network !== undefined) event.network = networkRecord(payload.network);
  if (payload.project_config !== undefined) event.projectConfig = { ...payload.project_config };
  return event;
}
