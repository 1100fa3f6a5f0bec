/**
 * The configuration of what makes the enricher's events durable, as JSON Schema fragments the
 * enricher's schema (`configSchema.ts`) takes in: `outputs.jetstream` (a stream with publish
 * acknowledgements), `outputs.state` (each instance's latest record in a KV bucket) and `standby`
 * (a second enricher waiting on an election). Defaults are applied in `durableSettings.ts`, not
 * by the schema: a JetStream output without its own server takes `outputs.nats`'s.
 */
import { BYTE_SIZE_PATTERN } from './byteSize';

const DURATION_PATTERN = '^(0|([0-9]+(\\.[0-9]+)?(ms|s|m|h))+)$';
const duration = { anyOf: [{ type: 'string', pattern: DURATION_PATTERN }, { const: 0 }] } as const;

/** JetStream's own rule for a stream or bucket name, narrowed to what every tool accepts. */
const NAME_PATTERN = '^[A-Za-z0-9_-]+$';

/** Defaults of the durable keys, as written in a file. */
export const DURABLE_DEFAULTS = {
  stream: 'INCUS_EVENTS',
  replicas: 1,
  max_age: '168h',
  max_bytes: '1GiB',
  duplicate_window: '2m',
  max_held: 10_000,
  max_pending: 256,
  ack_timeout: '5s',
  state_bucket: 'INCUS_STATE',
  election_bucket: 'RXFLEET_ENRICHER_ELECTION',
  election_key: 'enricher',
  election_ttl: '10s',
} as const;

/** How to reach a NATS server: shared by `outputs.nats` and `outputs.jetstream`. */
export const NATS_CONNECTION_PROPERTIES = {
  url: { description: 'NATS server URL(s), comma separated.', type: 'string', minLength: 1 },
  user: { type: 'string', minLength: 1 },
  password: { description: 'Never logged.', type: 'string' },
  token: { description: 'Never logged.', type: 'string', minLength: 1 },
  credentials: { description: 'A NATS credentials file (a user JWT and its nkey seed).', type: 'string', minLength: 1 },
  tls: {
    type: 'object',
    additionalProperties: false,
    properties: {
      ca: { description: 'CA file to verify the server with.', type: 'string', minLength: 1 },
      cert: { description: 'Client certificate file.', type: 'string', minLength: 1 },
      key: { description: 'Client key file.', type: 'string', minLength: 1 },
    },
  },
} as const;

const replicas = { description: 'Servers holding it (1, or 3 or 5 on a cluster).', type: 'integer', minimum: 1, maximum: 5 } as const;

/** `outputs.jetstream`. */
export const JETSTREAM_OUTPUT_SCHEMA = {
  description:
    'Publish each event to a JetStream stream and hold it until the stream acknowledges it. Without url (and the credentials), outputs.nats connects it.',
  type: 'object',
  additionalProperties: false,
  properties: {
    ...NATS_CONNECTION_PROPERTIES,
    name: { description: 'The connection name the server shows (default rxfleet-enrich).', type: 'string', minLength: 1 },
    subject_prefix: {
      description: 'Subjects are <prefix>.<project>.<kind>.<action>.<name> (default incus.events).',
      type: 'string',
      pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$',
    },
    stream: { description: 'The stream that captures <prefix>.>.', type: 'string', pattern: NAME_PATTERN },
    create: { description: 'Create the stream when it is missing (else a missing stream stops the start).', type: 'boolean' },
    replicas: { ...replicas, description: 'Replicas of a stream the enricher creates.' },
    max_age: { description: 'How long a stream the enricher creates keeps an event (0: for ever).', ...duration },
    max_bytes: {
      description: 'How much a stream the enricher creates keeps, oldest dropped first (512MiB, 1GB, bytes; 0: no limit).',
      anyOf: [
        { type: 'integer', minimum: 0 },
        { type: 'string', pattern: BYTE_SIZE_PATTERN },
      ],
    },
    duplicate_window: { description: 'The duplicate window of a stream the enricher creates.', ...duration },
    max_held: {
      description: 'Events held until acknowledged (sent or waiting); beyond it the oldest waiting are dropped and counted.',
      type: 'integer',
      minimum: 1,
    },
    max_pending: { description: 'Events sent and not yet acknowledged, at most.', type: 'integer', minimum: 1, maximum: 65_536 },
    ack_timeout: { description: 'How long one publish waits for its acknowledgement before it is sent again.', ...duration },
  },
} as const;

/** `outputs.state`. */
export const STATE_OUTPUT_SCHEMA = {
  description: "Each instance's latest enriched record in a KV bucket (key <project>.<name>), deleted with a marker when it goes.",
  type: 'object',
  additionalProperties: false,
  properties: {
    bucket: { description: 'The KV bucket (default INCUS_STATE).', type: 'string', pattern: NAME_PATTERN },
    create: { description: 'Create the bucket when it is missing.', type: 'boolean' },
    replicas: { ...replicas, description: 'Replicas of a bucket the enricher creates.' },
  },
} as const;

/** `standby`. */
export const STANDBY_SCHEMA = {
  description:
    'Run as one of a pair on the same Incus server: the one that wins the election enriches, the other waits, warm from the state bucket.',
  type: 'object',
  additionalProperties: false,
  properties: {
    bucket: { description: 'The election bucket (default RXFLEET_ENRICHER_ELECTION).', type: 'string', pattern: NAME_PATTERN },
    key: {
      description: 'The key the pair campaigns for: one per Incus server (default enricher).',
      type: 'string',
      pattern: '^[-/_=.a-zA-Z0-9]+$',
    },
    identity: { description: 'Who this member is in the election (default the host name).', type: 'string', minLength: 1 },
    ttl: { description: 'The election bucket TTL when the enricher creates it: how long a silent leader holds the key.', ...duration },
    create: { description: 'Create the election bucket when it is missing.', type: 'boolean' },
    replicas: { ...replicas, description: 'Replicas of an election bucket the enricher creates.' },
  },
} as const;
