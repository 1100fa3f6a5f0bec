/**
 * The JSON Schema of the provisioner's YAML configuration: upstream's keys (reference §4) with
 * their defaults, and rxfleet's own keys under `rxfleet:` (a section the Go provisioner ignores, so
 * one file serves both). Two annotation keywords are ours: `expected` is the text a problem shows
 * when a value is refused, and `secret: true` keeps a refused value out of the message.
 */
import { INCUS_FEED_SCHEMA, RawIncusFeed } from '../sightings/incusFeedConfig';
import type { ProvisionerConfig, RxfleetSettings } from './configTypes';
import { definedFields } from '../../definedFields';

const string = (defaultValue: string | undefined, expected = 'a string', extra: Record<string, unknown> = {}) => ({
  type: 'string',
  ...definedFields({ default: defaultValue }),
  expected,
  ...extra,
});
const boolean = { type: 'boolean', default: false, expected: 'true or false' } as const;

/** The JSON Schema (draft 7, for ajv) of a provisioner configuration after key folding. */
export const PROVISIONER_CONFIG_SCHEMA = {
  $id: 'rxfleet:provisioner-config',
  type: 'object',
  properties: {
    workers: { type: 'integer', minimum: 0, default: 0, expected: 'a whole number >= 0 (0 means one per CPU)' },
    interval: string('1m', 'a duration of at least 1m such as 5m or 1h'),
    logfile: string('', 'a file name, or stdout, stderr or discard'),
    // Empty: warn with a log file (upstream's default), info on stdout (P6); see configRules.
    loglevel: string('', 'one of debug, info, warn, error or fatal'),
    helper: string('', 'the helper command line'),
    token: string('', 'a string', { secret: true }),
    lifecycle_component: string('provision_mode_server', 'a component name without ".", ">", "*" or spaces'),
    choria_insecure: boolean,
    site: string(''),
    monitor_port: { type: 'integer', minimum: 0, maximum: 65535, default: 0, expected: 'a port number from 0 (off) to 65535' },
    broker_port: { type: 'integer', expected: 'a whole number (the key is deprecated and ignored)' },
    broker_provisioning_password: string('', 'a string', { secret: true }),
    cert_deny_list: {
      type: 'array',
      items: string(undefined, 'a regular expression'),
      default: [],
      expected: 'a list of regular expressions',
    },
    jwt_verify_cert: string('', 'a file name or a hex ed25519 public key'),
    jwt_signing_key: string('', 'a file name'),
    jwt_signing_token: string('', 'a file name'),
    server_jwt_validity: string('1y', 'a duration such as 1y, 52w or 8760h'),
    rego_policy: string(undefined, 'a string (the key is deprecated and ignored)'),
    leader_election: boolean,
    upgrades_repository: string('', 'an http:// or https:// URL', { anyOf: [{ const: '' }, { format: 'uri', pattern: '^https?://' }] }),
    upgrades_optional: boolean,
    features: {
      type: 'object',
      default: {},
      expected: 'a mapping of pki, jwt, ed25519 and upgrades to true or false',
      properties: { pki: boolean, jwt: boolean, ed25519: boolean, upgrades: boolean },
    },
    rxfleet: {
      type: 'object',
      default: {},
      expected: "a mapping of rxfleet's own settings",
      properties: {
        nats_servers: {
          type: 'array',
          default: [],
          expected: 'a list of NATS servers (host:port or nats://host:port)',
          items: string(undefined, 'a NATS server (host:port, nats://host:port or tls://host:port)', {
            pattern: '^((nats|tls|ws|wss)://)?([^\\s/@]+@)?[^\\s/:@]+(:\\d{1,5})?$',
          }),
        },
        nats_user: string(undefined),
        nats_password: string(undefined, 'a string', { secret: true }),
        nats_credentials: string(undefined, 'a NATS credentials (.creds) file name'),
        pkcs11_pin_file: string(undefined, "a file name (holding the pkcs11 security provider's token PIN)"),
        queue_capacity: { type: 'integer', minimum: 1, default: 50_000, expected: 'a whole number >= 1' },
        shutdown_grace: string('30s', 'a duration such as 30s or 2m'),
        helper_timeout: string('10s', 'a duration such as 10s'),
        election_api_prefix: string('choria.streams', 'a JetStream API prefix such as choria.streams or $JS.API', {
          pattern: '^[^\\s*>]+$',
        }),
        election_candidate_interval: string('', 'a duration such as 15s (empty: a quarter of the bucket TTL)'),
        dns_servers: {
          type: 'array',
          default: [],
          expected: 'a list of DNS servers (ip or ip:port) to ask for SRV records',
          items: string(undefined, 'a DNS server address (ip or ip:port)', {
            pattern: '^(\\[[0-9A-Fa-f:.]+\\]|[0-9A-Fa-f:.]+)(:\\d{1,5})?$',
          }),
        },
        log_format: {
          type: 'string',
          enum: ['', 'json', 'logfmt', 'logrus-json', 'pretty'],
          default: '',
          expected: 'one of json, logfmt, logrus-json or pretty',
        },
        monitor_host: string('', 'an address to serve /metrics on, such as 127.0.0.1 (empty: every interface)'),
        mode: { type: 'string', enum: ['single', 'active-active'], default: 'single', expected: 'single or active-active' },
        helper_mode: { type: 'string', enum: ['per-node', 'persistent'], default: 'per-node', expected: 'per-node or persistent' },
        helper_processes: {
          type: 'integer',
          minimum: 0,
          default: 0,
          expected: 'a whole number >= 0 (0: the worker count, at most one per CPU)',
        },
        claims_bucket: string('RXFLEET_PROVISIONER_CLAIMS', 'a JetStream KV bucket name (letters, digits, - and _)', {
          pattern: '^[-\\w]+$',
        }),
        claims_api_prefix: string('choria.streams', 'a JetStream API prefix such as choria.streams or $JS.API', { pattern: '^[^\\s*>]+$' }),
        failure_backoff: string('1h', 'a duration such as 30m or 1h (0: every sighting, as upstream)'),
        records: boolean,
        records_stream: string('RXFLEET_PROVISIONER_RECORDS', 'a JetStream stream name (letters, digits, - and _)', {
          pattern: '^[-\\w]+$',
        }),
        records_subject: string('rxfleet.provisioner.records', 'a NATS subject prefix such as rxfleet.provisioner.records (no wildcards)', {
          pattern: '^[^\\s*>.]+(\\.[^\\s*>.]+)*$',
        }),
        records_api_prefix: string('choria.streams', 'a JetStream API prefix such as choria.streams or $JS.API', {
          pattern: '^[^\\s*>]+$',
        }),
        records_create: boolean,
        records_replicas: {
          type: 'integer',
          minimum: 0,
          maximum: 5,
          default: 0,
          expected: 'a whole number from 0 (3 on a cluster, else 1) to 5',
        },
        records_max_age: string('7d', 'a duration such as 7d or 72h'),
        records_max_bytes: {
          type: 'integer',
          minimum: 0,
          default: 1_073_741_824,
          expected: 'a whole number of bytes >= 0 (0: no limit but the age)',
        },
        records_per_node: { type: 'integer', minimum: 1, default: 50, expected: 'a whole number >= 1' },
        records_every: string('10s', 'a duration of at least 1s such as 10s'),
        // No default: the section present turns the Incus feed on.
        incus: INCUS_FEED_SCHEMA,
      },
    },
  },
} as const;

/** The keys a section accepts, for case-insensitive folding and unknown-key warnings. */
export const SECTION_KEYS: Record<'' | 'features' | 'rxfleet' | 'rxfleet.incus', readonly string[]> = {
  '': Object.keys(PROVISIONER_CONFIG_SCHEMA.properties),
  features: Object.keys(PROVISIONER_CONFIG_SCHEMA.properties.features.properties),
  rxfleet: Object.keys(PROVISIONER_CONFIG_SCHEMA.properties.rxfleet.properties),
  'rxfleet.incus': Object.keys(INCUS_FEED_SCHEMA.properties),
};

/** Keys accepted for compatibility and ignored (DECISIONS P15), with what to do instead. */
export const DEPRECATED_KEYS: Record<string, string> = {
  broker_port: 'the embedded broker was removed upstream; the key is accepted and ignored',
  rego_policy: 'OPA policies for admission were removed upstream; the key is accepted and ignored',
};

/** A document after key folding and the schema's defaults, as the schema promises it. */
export interface RawConfig {
  workers: number;
  interval: string;
  logfile: string;
  loglevel: string;
  helper: string;
  token: string;
  lifecycle_component: string;
  choria_insecure: boolean;
  site: string;
  monitor_port: number;
  broker_provisioning_password: string;
  cert_deny_list: string[];
  jwt_verify_cert: string;
  jwt_signing_key: string;
  jwt_signing_token: string;
  server_jwt_validity: string;
  leader_election: boolean;
  upgrades_repository: string;
  upgrades_optional: boolean;
  features: ProvisionerConfig['features'];
  rxfleet: {
    nats_servers: string[];
    nats_user?: string;
    nats_password?: string;
    nats_credentials?: string;
    pkcs11_pin_file?: string;
    queue_capacity: number;
    shutdown_grace: string;
    helper_timeout: string;
    election_api_prefix: string;
    election_candidate_interval: string;
    dns_servers: string[];
    log_format: '' | 'json' | 'logfmt' | 'logrus-json' | 'pretty';
    monitor_host: string;
    mode: RxfleetSettings['mode'];
    helper_mode: RxfleetSettings['helperMode'];
    helper_processes: number;
    claims_bucket: string;
    claims_api_prefix: string;
    incus?: RawIncusFeed;
    failure_backoff: string;
    records: boolean;
    records_stream: string;
    records_subject: string;
    records_api_prefix: string;
    records_create: boolean;
    records_replicas: number;
    records_max_age: string;
    records_max_bytes: number;
    records_per_node: number;
    records_every: string;
  };
}
