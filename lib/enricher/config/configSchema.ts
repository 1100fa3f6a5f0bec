/**
 * The enricher's configuration file as a JSON Schema (draft 2020-12) and its defaults: what the
 * keys are, what each accepts, and what it means.
 */
import { COLD_STORE_FILE } from '../coldStore/coldStore';
import { ENRICHMENT_NAMES } from '../model/wanted';
import { JETSTREAM_OUTPUT_SCHEMA, NATS_CONNECTION_PROPERTIES, STANDBY_SCHEMA, STATE_OUTPUT_SCHEMA } from './durableSchema';

// A unit is required (a bare `10` would be ten milliseconds to someone who meant seconds); Go's
// syntax otherwise, parsed by the same function as the provisioner's durations.
const DURATION_PATTERN = '^(0|([0-9]+(\\.[0-9]+)?(ms|s|m|h))+)$';
const duration = { anyOf: [{ type: 'string', pattern: DURATION_PATTERN }, { const: 0 }] } as const;

/** Configuration keys and their defaults, as written in a file. */
export const ENRICHER_DEFAULTS = {
  workers: 16,
  read_timeout: '10s',
  ip_timeout: '10s',
  read_delay: '5s',
  sweep_interval: '6h',
  store_interval: '5s',
  debounce_window: '250ms',
  ttl: '0',
  data_dir: '',
  config_exclude: ['cloud-init.', 'user.user-data', 'user.vendor-data', 'user.network-config', 'user.meta-data', 'environment.'],
  subject_prefix: 'incus.events',
  http: ':9153',
} as const;

const pemOrPath = { type: 'string', minLength: 1 } as const;

/** JSON Schema (draft 2020-12) of the enricher's configuration. */
export const ENRICHER_CONFIG_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://rxfleet.dev/schemas/enricher-config.json',
  title: 'rxfleet enrich configuration',
  type: 'object',
  properties: {
    projects: {
      description:
        'Projects served: a list of names, or a marker "key=value" (a bare key means "is true"; the value may be a comma list). Absent or empty: every project.',
      anyOf: [
        { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
        { type: 'string', pattern: '^[^=\\s]*(=.*)?$' },
      ],
    },
    instances: {
      description:
        'Instances served: a selector or a list of them, any of which serves an instance. "KEY=VALUE" (or "KEY=a,b") matches its expanded configuration (labels are user.* keys, e.g. user.rxfleet=1); anything else is a name pattern (* any run, ? any one character). Absent or empty: every instance.',
      anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    },
    workers: {
      description: 'Reads (and polls for an address) at once against the server, fleet-wide; a read waiting between polls holds none.',
      type: 'integer',
      minimum: 1,
      maximum: 1024,
      default: ENRICHER_DEFAULTS.workers,
    },
    read_timeout: { description: 'One read or one listing.', ...duration, default: ENRICHER_DEFAULTS.read_timeout },
    ip_timeout: {
      description: 'How long one read may poll for a started instance to run and get an address.',
      ...duration,
      default: ENRICHER_DEFAULTS.ip_timeout,
    },
    read_delay: { description: 'Pause between the reads of a paced round.', ...duration, default: ENRICHER_DEFAULTS.read_delay },
    sweep_interval: {
      description: 'Pause between the end of one round and the start of the next.',
      ...duration,
      default: ENRICHER_DEFAULTS.sweep_interval,
    },
    store_interval: {
      description: 'Pause between writes of the cold store (only when something changed).',
      ...duration,
      default: ENRICHER_DEFAULTS.store_interval,
    },
    debounce_window: {
      description: 'Quiet period that closes a burst on one subject; 0 turns debouncing off.',
      ...duration,
      default: ENRICHER_DEFAULTS.debounce_window,
    },
    ttl: {
      description: 'Re-read an instance this long after its last good read; 0 turns it off.',
      ...duration,
      default: ENRICHER_DEFAULTS.ttl,
    },
    data_dir: {
      description: `Directory of the cold store (${COLD_STORE_FILE}); empty keeps none.`,
      type: 'string',
      default: ENRICHER_DEFAULTS.data_dir,
    },
    config_exclude: {
      description: 'Instance configuration keys (by prefix) never held or published; volatile.* is always left out.',
      type: 'array',
      items: { type: 'string', minLength: 1 },
      default: ENRICHER_DEFAULTS.config_exclude,
    },
    wants: {
      description: 'What the consumer asks for, per action (replaces the default table; the enricher adds its own).',
      type: 'array',
      items: {
        type: 'object',
        required: ['action'],
        additionalProperties: false,
        properties: {
          action: { type: 'string', pattern: '^[a-z]+(-[a-z]+)+$' },
          enrich: { type: 'array', items: { enum: ENRICHMENT_NAMES }, uniqueItems: true, default: [] },
          debounce: { type: 'boolean', default: false },
        },
      },
    },
    incus: {
      description: 'The Incus or LXD server: its unix socket, or https with a client certificate and the server certificate pinned.',
      type: 'object',
      additionalProperties: false,
      properties: {
        url: {
          description:
            'A unix socket path (or unix:///path) or https://host[:port]. Absent: the local socket ($INCUS_SOCKET, $INCUS_DIR, $LXD_DIR, then the usual paths).',
          type: 'string',
          minLength: 1,
        },
        client_cert: { description: 'https: the client certificate (a PEM file path or the PEM text).', ...pemOrPath },
        client_key: { description: 'https: its private key (a PEM file path or the PEM text). Never logged.', ...pemOrPath },
        server_cert: { description: 'https: the server certificate to pin (a PEM file path or the PEM text).', ...pemOrPath },
        server_fingerprint: {
          description: 'https: the SHA-256 fingerprint of the server certificate to pin (hex, colons allowed).',
          type: 'string',
          minLength: 1,
        },
      },
    },
    http: {
      description: 'Where /metrics, /health and /ready listen: "[host]:port" (":9153", "127.0.0.1:9153"); "" serves none.',
      type: 'string',
      default: ENRICHER_DEFAULTS.http,
    },
    outputs: {
      type: 'object',
      additionalProperties: false,
      properties: {
        stdout: { description: 'Write each published event as one JSON line on stdout.', type: 'boolean', default: false },
        nats: {
          type: 'object',
          additionalProperties: false,
          properties: {
            ...NATS_CONNECTION_PROPERTIES,
            subject_prefix: {
              description: 'Subjects are <prefix>.<project>.<kind>.<action>.<name>.',
              type: 'string',
              pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$',
              default: ENRICHER_DEFAULTS.subject_prefix,
            },
            name: { description: 'The connection name the server shows.', type: 'string', minLength: 1, default: 'rxfleet-enrich' },
            max_held: {
              description:
                'Events held while NATS is unreachable, sent in order on reconnect; beyond it the oldest are dropped and counted.',
              type: 'integer',
              minimum: 0,
              default: 10000,
            },
          },
        },
        jetstream: JETSTREAM_OUTPUT_SCHEMA,
        state: STATE_OUTPUT_SCHEMA,
      },
    },
    standby: STANDBY_SCHEMA,
  },
} as const;
