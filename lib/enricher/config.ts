/**
 * The enricher's configuration: its JSON Schema, its defaults, and the one function that turns a
 * parsed file (YAML or JSON) into settings, refusing bad values with their paths and warning about
 * keys it does not know.
 */
import Ajv2020 from 'ajv/dist/2020';
import { ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { join } from 'node:path';
import { COLD_STORE_FILE } from './coldStore';
import { parseGoDuration } from '../duration';
import { ListenAddress, parseListenAddress, splitNatsUrls } from '../addresses';

// Moved to lib/addresses.ts (the commands share them); exported here as before.
export type { ListenAddress };
export { parseListenAddress, splitNatsUrls };
import { ProjectsServed, parseProjectsServed } from './servedProjects';
import { ENRICHMENT_NAMES, EnrichmentName, Want, DEFAULT_DAEMON_WANTS, enrichmentBits } from './wanted';

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
      description: 'Projects served: a list of names, or a marker "key=value" (a bare key means "is true"; the value may be a comma list). Absent or empty: every project.',
      anyOf: [{ type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true }, { type: 'string', pattern: '^[^=\\s]*(=.*)?$' }],
    },
    workers: { description: 'Reads in flight at once against the server, fleet-wide.', type: 'integer', minimum: 1, maximum: 1024, default: ENRICHER_DEFAULTS.workers },
    read_timeout: { description: 'One read or one listing.', ...duration, default: ENRICHER_DEFAULTS.read_timeout },
    ip_timeout: { description: 'How long one read may poll for a started instance to run and get an address.', ...duration, default: ENRICHER_DEFAULTS.ip_timeout },
    read_delay: { description: 'Pause between the reads of a paced round.', ...duration, default: ENRICHER_DEFAULTS.read_delay },
    sweep_interval: { description: 'Pause between the end of one round and the start of the next.', ...duration, default: ENRICHER_DEFAULTS.sweep_interval },
    store_interval: { description: 'Pause between writes of the cold store (only when something changed).', ...duration, default: ENRICHER_DEFAULTS.store_interval },
    debounce_window: { description: 'Quiet period that closes a burst on one subject; 0 turns debouncing off.', ...duration, default: ENRICHER_DEFAULTS.debounce_window },
    ttl: { description: 'Re-read an instance this long after its last good read; 0 turns it off.', ...duration, default: ENRICHER_DEFAULTS.ttl },
    data_dir: { description: `Directory of the cold store (${COLD_STORE_FILE}); empty keeps none.`, type: 'string', default: ENRICHER_DEFAULTS.data_dir },
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
        url: { description: 'A unix socket path (or unix:///path) or https://host[:port]. Absent: the local socket ($INCUS_SOCKET, $INCUS_DIR, $LXD_DIR, then the usual paths).', type: 'string', minLength: 1 },
        client_cert: { description: 'https: the client certificate (a PEM file path or the PEM text).', ...pemOrPath },
        client_key: { description: 'https: its private key (a PEM file path or the PEM text). Never logged.', ...pemOrPath },
        server_cert: { description: 'https: the server certificate to pin (a PEM file path or the PEM text).', ...pemOrPath },
        server_fingerprint: { description: 'https: the SHA-256 fingerprint of the server certificate to pin (hex, colons allowed).', type: 'string', minLength: 1 },
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
            url: { description: 'NATS server URL(s), comma separated.', type: 'string', minLength: 1 },
            subject_prefix: {
              description: 'Subjects are <prefix>.<project>.<kind>.<action>.<name>.',
              type: 'string',
              pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$',
              default: ENRICHER_DEFAULTS.subject_prefix,
            },
            name: { description: 'The connection name the server shows.', type: 'string', minLength: 1, default: 'rxfleet-enrich' },
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
            max_held: {
              description: 'Events held while NATS is unreachable, sent in order on reconnect; beyond it the oldest are dropped and counted.',
              type: 'integer',
              minimum: 0,
              default: 10000,
            },
          },
        },
      },
    },
  },
} as const;

/** Where the Incus or LXD server is (the options of `incusEndpoint`). */
export interface IncusSettings {
  url?: string;
  clientCert?: string;
  clientKey?: string;
  serverCert?: string;
  serverFingerprint?: string;
}

/** Where and how enriched events are published to NATS. */
export interface NatsOutputSettings {
  /** Server URLs; absent only when the configuration names no server (refused by the daemon). */
  servers: string[];
  subjectPrefix: string;
  name: string;
  user?: string;
  password?: string;
  token?: string;
  /** A NATS `.creds` file. */
  credentials?: string;
  tls?: { ca?: string; cert?: string; key?: string };
  /** Messages held while disconnected. */
  maxHeld: number;
}


/** The settings the pipeline runs with: durations in milliseconds, the projects rule parsed. */
export interface EnricherSettings {
  projects: ProjectsServed;
  workers: number;
  readTimeout: number;
  ipTimeout: number;
  readDelay: number;
  sweepInterval: number;
  storeInterval: number;
  debounceWindow: number;
  ttl: number;
  /** The cold store file, or `undefined` for none. */
  storeFile: string | undefined;
  configExclude: string[];
  /** The consumer's wants (the enricher's own are added to them). */
  wants: Want[];
  outputs: { stdout: boolean; nats?: NatsOutputSettings };
  /** The daemon's server: the local socket unless configured. */
  incus: IncusSettings;
  /** Where the daemon serves /metrics, /health and /ready; `undefined` for nowhere. */
  http: ListenAddress | undefined;
}

/** A configuration that cannot be used: every problem, one line each, with its path. */
export class EnricherConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid enricher configuration: ${problems.join('; ')}`);
    this.name = 'EnricherConfigError';
  }
}

const ajv = new Ajv2020({ allErrors: true, useDefaults: true, strict: true });
addFormats(ajv);
const validate = ajv.compile(ENRICHER_CONFIG_SCHEMA);

function describe(error: ErrorObject): string {
  const path = error.instancePath === '' ? '(top level)' : error.instancePath.slice(1).replace(/\//g, '.');
  if (error.keyword === 'additionalProperties') return `${path}: unknown key "${(error.params as { additionalProperty: string }).additionalProperty}"`;
  return `${path}: ${error.message ?? 'is invalid'}`;
}

// anyOf reports each branch's failure and then its own; the anyOf line says it best for a user.
function problemsOf(errors: ErrorObject[]): string[] {
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const lines = errors
    .filter((e) => e.keyword === 'anyOf' || !anyOfPaths.has(e.instancePath))
    .map((e) => {
      if (e.keyword !== 'anyOf') return describe(e);
      const path = e.instancePath.slice(1).replace(/\//g, '.');
      return path === 'projects'
        ? `${path}: expected a list of project names or a "key=value" marker`
        : `${path}: expected a duration such as 250ms, 10s, 5m or 6h (or 0)`;
    });
  return [...new Set(lines)];
}

/**
 * Settings from a parsed configuration object (`{}` or `undefined` gives every default).
 *
 * Keys the schema does not know at the top level are not fatal: each one is named in
 * `warnings` (DECISIONS: unknown keys warn). A wrong type or value is fatal: an
 * {@link EnricherConfigError} lists every problem with its path and what was expected.
 */
export function parseEnricherConfig(raw: unknown = {}): { settings: EnricherSettings; warnings: string[] } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new EnricherConfigError(['(top level): expected a mapping of keys']);
  const known = new Set(Object.keys(ENRICHER_CONFIG_SCHEMA.properties));
  const warnings: string[] = [];
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    if (known.has(key)) input[key] = value;
    else warnings.push(`unknown configuration key "${key}" ignored`);
  }
  const copy = structuredClone(input);
  if (!validate(copy)) {
    const problems = problemsOf(validate.errors ?? []);
    // Checked here too, so that one run reports every problem, not the schema's first.
    const http = (copy as { http?: unknown }).http;
    if (typeof http === 'string') {
      try {
        parseListenAddress(http);
      } catch (error) {
        problems.push(`http: ${(error as Error).message}`);
      }
    }
    throw new EnricherConfigError(problems);
  }
  const c = copy as {
    projects?: string[] | string;
    workers: number;
    read_timeout: string | 0;
    ip_timeout: string | 0;
    read_delay: string | 0;
    sweep_interval: string | 0;
    store_interval: string | 0;
    debounce_window: string | 0;
    ttl: string | 0;
    data_dir: string;
    config_exclude: string[];
    wants?: Array<{ action: string; enrich: EnrichmentName[]; debounce: boolean }>;
    outputs?: { stdout?: boolean; nats?: RawNats };
    incus?: { url?: string; client_cert?: string; client_key?: string; server_cert?: string; server_fingerprint?: string };
    http: string;
  };
  const problems: string[] = [];
  const ms = (key: 'read_timeout' | 'ip_timeout' | 'read_delay' | 'sweep_interval' | 'store_interval' | 'debounce_window' | 'ttl', min = 0): number => {
    const value = c[key] === 0 ? 0 : Math.round(parseGoDuration(String(c[key])));
    if (value < min) problems.push(`${key}: must be at least ${min} ms`);
    return value;
  };
  let http: ListenAddress | undefined;
  try {
    http = parseListenAddress(c.http);
  } catch (error) {
    problems.push(`http: ${(error as Error).message}`);
  }
  const settings: EnricherSettings = {
    projects: parseProjectsServed(c.projects),
    workers: c.workers,
    readTimeout: ms('read_timeout', 1),
    ipTimeout: ms('ip_timeout'),
    readDelay: ms('read_delay'),
    sweepInterval: ms('sweep_interval', 1),
    storeInterval: ms('store_interval', 1),
    debounceWindow: ms('debounce_window'),
    ttl: ms('ttl'),
    storeFile: c.data_dir === '' ? undefined : join(c.data_dir, COLD_STORE_FILE),
    configExclude: c.config_exclude,
    wants: c.wants === undefined ? DEFAULT_DAEMON_WANTS.map((w) => ({ ...w })) : c.wants.map((w) => ({ action: w.action, enrich: enrichmentBits(w.enrich), debounce: w.debounce })),
    outputs: {
      stdout: c.outputs?.stdout ?? false,
      ...(c.outputs?.nats !== undefined ? { nats: natsSettings(c.outputs.nats) } : {}),
    },
    incus: incusSettings(c.incus ?? {}),
    http,
  };
  if (problems.length > 0) throw new EnricherConfigError(problems);
  return { settings, warnings };
}

interface RawNats {
  url?: string;
  subject_prefix?: string;
  name?: string;
  user?: string;
  password?: string;
  token?: string;
  credentials?: string;
  tls?: { ca?: string; cert?: string; key?: string };
  max_held?: number;
}

function natsSettings(raw: RawNats): NatsOutputSettings {
  const { servers, credentials } = splitNatsUrls(raw.url ?? '');
  // Credentials written as keys win over credentials written into a URL.
  const user = raw.user ?? credentials?.user;
  const password = raw.password ?? credentials?.password;
  return {
    servers,
    subjectPrefix: raw.subject_prefix ?? ENRICHER_DEFAULTS.subject_prefix,
    name: raw.name ?? 'rxfleet-enrich',
    maxHeld: raw.max_held ?? 10_000,
    ...(user !== undefined ? { user } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(raw.token !== undefined ? { token: raw.token } : {}),
    ...(raw.credentials !== undefined ? { credentials: raw.credentials } : {}),
    ...(raw.tls !== undefined ? { tls: { ...raw.tls } } : {}),
  };
}

function incusSettings(raw: { url?: string; client_cert?: string; client_key?: string; server_cert?: string; server_fingerprint?: string }): IncusSettings {
  const out: IncusSettings = {};
  if (raw.url !== undefined) out.url = raw.url;
  if (raw.client_cert !== undefined) out.clientCert = raw.client_cert;
  if (raw.client_key !== undefined) out.clientKey = raw.client_key;
  if (raw.server_cert !== undefined) out.serverCert = raw.server_cert;
  if (raw.server_fingerprint !== undefined) out.serverFingerprint = raw.server_fingerprint;
  return out;
}

/** The settings with every default (for specs and embedding). */
export function defaultEnricherSettings(overrides: Partial<EnricherSettings> = {}): EnricherSettings {
  return { ...parseEnricherConfig({}).settings, ...overrides };
}
