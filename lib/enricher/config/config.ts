/**
 * The enricher's configuration: its JSON Schema, its defaults, and the one function that turns a
 * parsed file (YAML or JSON) into settings, refusing bad values with their paths and warning about
 * keys it does not know.
 */
import Ajv2020 from 'ajv/dist/2020';
import { ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { join } from 'node:path';
import { COLD_STORE_FILE } from '../coldStore/coldStore';
import { ENRICHER_CONFIG_SCHEMA, ENRICHER_DEFAULTS } from './configSchema';
import { parseGoDuration } from '../../duration';
import { ListenAddress, parseListenAddress, splitNatsUrls } from '../../addresses';
import { InstancesServed, parseInstancesServed } from '../model/instancesServed';
import { ProjectsServed, parseProjectsServed } from '../model/servedProjects';
import { EnrichmentName, Want, DEFAULT_DAEMON_WANTS, enrichmentBits } from '../model/wanted';
import { describe as describeValue, editDistance } from '../../configProblems';
import { JetStreamOutputSettings, RawDurable, StandbySettings, StateOutputSettings, durableSettings } from './durableSettings';

export { ENRICHER_CONFIG_SCHEMA, ENRICHER_DEFAULTS } from './configSchema';
// Moved to lib/addresses.ts (the commands share them); exported here as before.
export type { ListenAddress };
export { parseListenAddress, splitNatsUrls };
export type { JetStreamOutputSettings, StandbySettings, StateOutputSettings };

/** The longest a timer waits (2^31 - 1 ms): `setTimeout` fires at once past it. */
const LONGEST_TIMER_MS = 2 ** 31 - 1;
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
  /** Which instances are served (default every one). */
  instances: InstancesServed;
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
  outputs: { stdout: boolean; nats?: NatsOutputSettings; jetstream?: JetStreamOutputSettings; state?: StateOutputSettings };
  /** One of a pair on the same Incus server: it enriches only while it leads the election. */
  standby?: StandbySettings;
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

// verbose: each error carries the value it is about, for the provisioner's "expected X, got Y".
const ajv = new Ajv2020({ allErrors: true, useDefaults: true, strict: true, verbose: true });
addFormats(ajv);
const validate = ajv.compile(ENRICHER_CONFIG_SCHEMA);

/** Keys whose values are secrets: a problem names them and never what they hold. */
const SECRET_PATHS = new Set([
  'outputs.nats.password',
  'outputs.nats.token',
  'outputs.jetstream.password',
  'outputs.jetstream.token',
  'incus.client_key',
]);

const TYPE_WORDS: Record<string, string> = {
  integer: 'a whole number',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  array: 'a list',
  object: 'a mapping',
};

/** What the schema wanted, in the provisioner's words (lib/configProblems.ts). */
function expected(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'type':
      return String(params.type)
        .split(',')
        .map((t) => TYPE_WORDS[t] ?? t)
        .join(' or ');
    case 'minimum':
      return `a number >= ${String(params.limit)}`;
    case 'maximum':
      return `a number <= ${String(params.limit)}`;
    case 'enum':
      return `one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'minLength':
      return 'a non-empty string';
    case 'pattern':
      return `a string matching ${String(params.pattern)}`;
    default:
      return error.message ?? 'a valid value';
  }
}

/** One schema problem as the provisioner words its own: `key: expected X, got Y`, a secret's value never shown. */
function describe(error: ErrorObject): string {
  const path = error.instancePath === '' ? '(top level)' : error.instancePath.slice(1).replace(/\//g, '.');
  if (error.keyword === 'additionalProperties') {
    const key = (error.params as { additionalProperty: string }).additionalProperty;
    return `${path}.${key}: unknown key`;
  }
  if (error.keyword === 'required') return `${path}: ${error.message ?? 'is incomplete'}`;
  const value = error.data as unknown;
  const got = SECRET_PATHS.has(path) ? `a ${typeof value} (value not shown: it is a secret)` : describeValue(value);
  return `${path}: expected ${expected(error)}, got ${got}`;
}

/** The known top-level key an unknown one is likely a misspelling of (at most two edits away), if any. */
function suggestion(key: string, known: Iterable<string>): string | undefined {
  for (const candidate of known) if (editDistance(candidate, key.toLowerCase()) <= 2) return candidate;
  return undefined;
}

// anyOf reports each branch's failure and then its own; the anyOf line says it best for a user.
function problemsOf(errors: ErrorObject[]): string[] {
  const anyOfPaths = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const lines = errors
    .filter((e) => e.keyword === 'anyOf' || !anyOfPaths.has(e.instancePath))
    .map((e) => {
      if (e.keyword !== 'anyOf') return describe(e);
      const path = e.instancePath.slice(1).replace(/\//g, '.');
      if (path === 'projects') return `${path}: expected a list of project names or a "key=value" marker`;
      if (path === 'instances') return `${path}: expected a "key=value" label or a name pattern, or a list of them`;
      if (path.endsWith('max_bytes')) return `${path}: expected a size such as 512MiB or 1GB, or a whole number of bytes`;
      return `${path}: expected a duration such as 250ms, 10s, 5m or 6h (or 0)`;
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
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new EnricherConfigError(['(top level): expected a mapping of keys']);
  const { input, warnings } = knownKeys(raw as Record<string, unknown>);
  const c = validated(input);
  const problems: string[] = [];
  const ms = (key: DurationKey, min = 0): number => duration(c, key, min, problems);
  let http: ListenAddress | undefined;
  try {
    http = parseListenAddress(c.http);
  } catch (error) {
    problems.push(`http: ${(error as Error).message}`);
  }
  let instances: InstancesServed = { mode: 'all' };
  try {
    instances = parseInstancesServed(c.instances);
  } catch (error) {
    problems.push(`instances: ${(error as Error).message}`);
  }
  const coreNats = c.outputs?.nats === undefined ? undefined : natsSettings(c.outputs.nats);
  const durable = durableSettings(
    { nats: c.outputs?.nats, jetstream: c.outputs?.jetstream, state: c.outputs?.state, standby: c.standby },
    coreNats?.subjectPrefix,
  );
  problems.push(...durable.problems);
  const settings: EnricherSettings = {
    projects: parseProjectsServed(c.projects),
    instances,
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
    wants:
      c.wants === undefined
        ? DEFAULT_DAEMON_WANTS.map((w) => ({ ...w }))
        : c.wants.map((w) => ({ action: w.action, enrich: enrichmentBits(w.enrich), debounce: w.debounce })),
    outputs: {
      stdout: c.outputs?.stdout ?? false,
      ...(coreNats !== undefined ? { nats: coreNats } : {}),
      ...(durable.jetstream !== undefined ? { jetstream: durable.jetstream } : {}),
      ...(durable.state !== undefined ? { state: durable.state } : {}),
    },
    ...(durable.standby !== undefined ? { standby: durable.standby } : {}),
    incus: incusSettings(c.incus ?? {}),
    http,
  };
  if (problems.length > 0) throw new EnricherConfigError(problems);
  return { settings, warnings };
}

/** The top-level keys the schema knows, and a warning for each other one (with the key it likely misspells). */
function knownKeys(raw: Record<string, unknown>): { input: Record<string, unknown>; warnings: string[] } {
  const known = new Set(Object.keys(ENRICHER_CONFIG_SCHEMA.properties));
  const warnings: string[] = [];
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (known.has(key)) input[key] = value;
    else {
      const hint = suggestion(key, known);
      warnings.push(`${key}: unknown key, ignored${hint === undefined ? '' : ` (did you mean ${hint}?)`}`);
    }
  }
  return { input, warnings };
}

/** The configuration as the schema checked it, its defaults filled in. */
type RawConfig = {
  projects?: string[] | string;
  instances?: string[] | string;
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
  outputs?: { stdout?: boolean; nats?: RawNats; jetstream?: RawDurable['jetstream']; state?: RawDurable['state'] };
  standby?: RawDurable['standby'];
  incus?: { url?: string; client_cert?: string; client_key?: string; server_cert?: string; server_fingerprint?: string };
  http: string;
};

/** A copy of `input` checked against the schema, with its defaults; else every problem, thrown. */
function validated(input: Record<string, unknown>): RawConfig {
  const copy = structuredClone(input);
  if (validate(copy)) return copy as RawConfig;
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

type DurationKey = 'read_timeout' | 'ip_timeout' | 'read_delay' | 'sweep_interval' | 'store_interval' | 'debounce_window' | 'ttl';

/** A duration in ms, at least `min`; a value out of range is added to `problems`. */
function duration(c: RawConfig, key: DurationKey, min: number, problems: string[]): number {
  const value = c[key] === 0 ? 0 : Math.round(parseGoDuration(String(c[key])));
  if (value < min) problems.push(`${key}: must be at least ${min} ms`);
  // Every duration here is waited by a timer, and a timer asked to wait longer fires at once.
  if (value > LONGEST_TIMER_MS)
    problems.push(`${key}: must be at most ${LONGEST_TIMER_MS} ms (about 24.8 days, the longest a timer waits)`);
  return value;
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

function incusSettings(raw: {
  url?: string;
  client_cert?: string;
  client_key?: string;
  server_cert?: string;
  server_fingerprint?: string;
}): IncusSettings {
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
