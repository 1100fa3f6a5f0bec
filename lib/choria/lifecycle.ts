import { randomUUID } from 'node:crypto';
import { ProtocolError } from './errors';
import { validateLifecycleComponent } from './lifecycleComponent';
import { LIFECYCLE_BOUNDS, LIFECYCLE_MAX_BYTES } from './protocol/bounds';
import { utf8 } from './protocol/encoding';
import { parsePlainJson, refuse } from './protocol/layers';
import { MAX_IDENTITY_LENGTH, compileSchema, schemaErrors } from './protocol/schemas';
import { Decoded } from './protocol/types';
import { definedFields } from '../definedFields';

export { validateLifecycleComponent };

/** The lifecycle event types go-choria publishes. */
export const LIFECYCLE_TYPES = ['startup', 'shutdown', 'provisioned', 'alive', 'governor', 'upgraded'] as const;
export type LifecycleType = (typeof LIFECYCLE_TYPES)[number];

/** `choria`: the event object published raw (legacy); `cloudevents`: wrapped in a CloudEvents 1.0 envelope (servers' default). */
export type LifecycleFormat = 'choria' | 'cloudevents';

/** The component a provisioning-mode server announces itself as. */
export const PROVISION_MODE_COMPONENT = 'provision_mode_server';
/** The component a provisioned (normal) server announces itself as. */
export const SERVER_COMPONENT = 'server';

/** A lifecycle event, whichever format carried it. */
export interface LifecycleEvent {
  type: LifecycleType;
  format: LifecycleFormat;
  /** Always the current form, `io.choria.lifecycle.v1.<type>`, also when the legacy `choria:lifecycle:<type>:1` arrived. */
  protocol: string;
  id: string;
  identity: string;
  component: string;
  /** Unix seconds. */
  timestamp: number;
  /** startup, alive, upgraded: the component's version (upgraded: the version before). */
  version?: string;
  /** upgraded: the version after. */
  newVersion?: string;
}

interface LegacyEvent {
  protocol: string;
  id: string;
  identity: string;
  component: string;
  timestamp: number;
  version?: string;
  new_version?: string;
}

const validLegacy = compileSchema<LegacyEvent>({
  type: 'object',
  required: ['protocol', 'id', 'identity', 'component', 'timestamp'],
  properties: {
    protocol: { type: 'string' },
    id: { type: 'string' },
    // A longer one could never be asked anything (MAX_IDENTITY_LENGTH): refused, not sighted.
    identity: { type: 'string', minLength: 1, maxLength: MAX_IDENTITY_LENGTH },
    component: { type: 'string', minLength: 1 },
    timestamp: { type: 'integer' },
    version: { type: 'string' },
    new_version: { type: 'string' },
  },
});

const validCloudEvent = compileSchema<{ specversion: '1.0'; source: string; data?: unknown; data_base64?: string }>({
  type: 'object',
  required: ['specversion', 'source', 'id', 'type'],
  properties: {
    specversion: { const: '1.0' },
    source: { const: 'io.choria.lifecycle' },
    id: { type: 'string' },
    type: { type: 'string' },
    data: { type: 'object' },
    data_base64: { type: 'string' },
  },
});

/** `io.choria.lifecycle.v1.provisioned` or `choria:lifecycle:provisioned:1` to `provisioned`, as go-choria's protoStringToTypeString. */
function typeOfProtocol(protocol: string): LifecycleType | undefined {
  let name: string | undefined;
  if (protocol.startsWith('choria:lifecycle')) {
    const parts = protocol.split(':');
    if (parts.length === 4) name = parts[2];
  } else if (protocol.startsWith('io.choria.lifecycle')) {
    const parts = protocol.split('.');
    if (parts.length === 5) name = parts[4];
  }
  return (LIFECYCLE_TYPES as readonly string[]).includes(name ?? '') ? (name as LifecycleType) : undefined;
}

function fromLegacy(value: Record<string, unknown>, format: LifecycleFormat): Decoded<LifecycleEvent> {
  if (!validLegacy(value)) return refuse('schema', 'lifecycle', schemaErrors(validLegacy));
  const type = typeOfProtocol(value.protocol);
  if (type === undefined) return refuse('protocol', 'lifecycle', `unknown protocol ${JSON.stringify(value.protocol).slice(0, 80)}`);
  const event: LifecycleEvent = {
    type,
    format,
    protocol: `io.choria.lifecycle.v1.${type}`,
    id: value.id,
    identity: value.identity,
    component: value.component,
    timestamp: value.timestamp,
  };
  if (value.version !== undefined) event.version = value.version;
  if (value.new_version !== undefined) event.newVersion = value.new_version;
  return { ok: true, value: event };
}

/**
 * Parses a lifecycle event in either format, detected as go-choria's `EventFormatFromJSON` does:
 * a `protocol` naming a lifecycle event means the legacy Choria format; otherwise `specversion`
 * `1.0` with `source` `io.choria.lifecycle` means a CloudEvent whose `data` is the legacy object.
 * (Unlike go-choria, the legacy `choria:lifecycle:<type>:1` protocol strings are recognised at the
 * top level too, as the reference says the parser accepts them.) What cannot be an event is refused
 * before it is built: over `maxBytes` (default 64 KiB, {@link LIFECYCLE_MAX_BYTES}: a real one is
 * under 1 KiB) unread, and text that is not an object or nests beyond {@link LIFECYCLE_BOUNDS}
 * before `JSON.parse`. Never throws.
 */
export function parseLifecycleEvent(data: Uint8Array | string, options: { maxBytes?: number } = {}): Decoded<LifecycleEvent> {
  const maxBytes = options.maxBytes ?? LIFECYCLE_MAX_BYTES;
  const size = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
  if (size > maxBytes) return refuse('oversized', 'lifecycle', `${size} bytes is more than ${maxBytes}`);
  const parsed = parsePlainJson(typeof data === 'string' ? data : utf8(data), 'lifecycle', LIFECYCLE_BOUNDS);
  if (!parsed.ok) return parsed;
  const value = parsed.value;
  if (
    typeof value.protocol === 'string' &&
    (value.protocol.startsWith('io.choria.lifecycle') || value.protocol.startsWith('choria:lifecycle'))
  ) {
    return fromLegacy(value, 'choria');
  }
  if (value.specversion === '1.0' && value.source === 'io.choria.lifecycle') {
    if (!validCloudEvent(value)) return refuse('schema', 'lifecycle', schemaErrors(validCloudEvent));
    let inner: unknown = value.data;
    if (inner === undefined && value.data_base64 !== undefined) {
      const decoded = parsePlainJson(Buffer.from(value.data_base64, 'base64').toString('utf8'), 'lifecycle', LIFECYCLE_BOUNDS);
      if (!decoded.ok) return decoded;
      inner = decoded.value;
    }
    if (typeof inner !== 'object' || inner === null) return refuse('schema', 'lifecycle', 'cloudevent carries no data');
    return fromLegacy(inner as Record<string, unknown>, 'cloudevents');
  }
  return { ok: false, error: new ProtocolError('protocol', 'lifecycle', 'unsupported event format') };
}

/** Fields of a new event; `id` and `timestamp` default to a fresh UUID and now. */
export interface NewLifecycleEvent {
  identity: string;
  component: string;
  version?: string;
  newVersion?: string;
  id?: string;
  /** Unix seconds. */
  timestamp?: number;
}

/** A new event of `type` (format `choria` until serialised otherwise). */
export function newLifecycleEvent(type: LifecycleType, fields: NewLifecycleEvent): LifecycleEvent {
  const event: LifecycleEvent = {
    type,
    format: 'choria',
    protocol: `io.choria.lifecycle.v1.${type}`,
    id: fields.id ?? randomUUID(),
    identity: fields.identity,
    component: fields.component,
    timestamp: fields.timestamp ?? Math.floor(Date.now() / 1000),
  };
  if (fields.version !== undefined) event.version = fields.version;
  if (fields.newVersion !== undefined) event.newVersion = fields.newVersion;
  return event;
}

function legacyObject(event: LifecycleEvent): Record<string, unknown> {
  return {
    protocol: event.protocol,
    id: event.id,
    identity: event.identity,
    component: event.component,
    timestamp: event.timestamp,
    ...definedFields({ version: event.version, new_version: event.newVersion }),
  };
}

/** The JSON go-choria publishes for `event` in `format` (CloudEvents time in RFC 3339 without fractions, as Go writes it). */
export function lifecycleEventJson(event: LifecycleEvent, format: LifecycleFormat): string {
  const legacy = legacyObject(event);
  if (format === 'choria') return JSON.stringify(legacy);
  return JSON.stringify({
    specversion: '1.0',
    id: event.id,
    source: 'io.choria.lifecycle',
    type: event.protocol,
    subject: event.identity,
    datacontenttype: 'application/json',
    time: new Date(event.timestamp * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    data: legacy,
  });
}

/** `choria.lifecycle.event.<type>.<component>`; `*` as type listens to every type. */
export function lifecycleSubject(type: LifecycleType | '*', component: string): string {
  validateLifecycleComponent(component);
  return `choria.lifecycle.event.${type}.${component}`;
}
