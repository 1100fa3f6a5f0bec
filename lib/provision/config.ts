import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { availableParallelism } from 'node:os';
import { readYamlConfig } from '../yamlConfig';
import { DurationSyntaxError, parseChoriaDuration } from '../choria/duration';
import { CertDenyList, DenyPatternError } from './certDenyList';
import { DEPRECATED_KEYS, PROVISIONER_CONFIG_SCHEMA, SECTION_KEYS } from './configSchema';
import { HelperCommandError, splitHelperCommand } from './helperCommand';
import { isValidLifecycleComponent } from '../choria/lifecycleComponent';
import { splitNatsUrls } from '../addresses';
import { RawIncusFeed, parseIncusFeed } from './incusFeedConfig';
import {
  ConfigProblem,
  ConfigurationError,
  LogDestination,
  ParseConfigOptions,
  ProvisionerConfig,
  ProvisionerConfigResult,
  RxfleetSettings,
} from './configTypes';
import { describe, editDistance, errorPath, schemaMessage } from './configProblems';

export { ConfigurationError } from './configTypes';
export type {
  ConfigProblem,
  LogDestination,
  ParseConfigOptions,
  ProvisionerConfig,
  ProvisionerConfigResult,
  RxfleetSettings,
} from './configTypes';

/** Keys whose values are secrets: a problem names them and never what they hold (keys match in any case). */
const SECRET_KEYS = new Set(['token', 'broker_provisioning_password', 'rxfleet.nats_password']);

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, verbose: true });
addFormats(ajv, ['uri']);
ajv.addVocabulary(['expected', 'secret']);
const validateSchema = ajv.compile(PROVISIONER_CONFIG_SCHEMA);

/**
 * Reads a provisioner YAML configuration and reports every problem at once, never only the first.
 *
 * Upstream parses YAML 1.1 into JSON and then Go's `json.Unmarshal`; rxfleet keeps what a user of
 * it relies on and does better where DECISIONS says so:
 * - YAML 1.1 (`yes`/`no` are booleans) with merge keys, as go-yaml v2; a key given as `null` keeps
 *   its default, as Go does;
 * - keys match case-insensitively (`Workers` is `workers`), as Go's JSON decoding;
 * - an unknown key is a warning naming it (upstream ignores it silently); `broker_port` and
 *   `rego_policy` are accepted and ignored with a deprecation warning (P15);
 * - a type mismatch or an invalid value is an error naming the key's path and what was expected,
 *   without echoing the value of a secret;
 * - a file upstream starts with, rxfleet starts with: what upstream would only discover while
 *   provisioning each node (no helper or one that cannot be split, jwt without `jwt_verify_cert`,
 *   ed25519 without `jwt_signing_key`, upgrades without a repository), a log level it does not
 *   know (it logs at warn) and a lifecycle component with white space (no startup events) are
 *   warnings, and rxfleet then behaves as upstream does;
 * - a value upstream would misread is refused with the reason: a negative `workers` (no worker
 *   at all), a deny-list pattern that does not compile (upstream silently never matches it, so the
 *   check it asks for is off).
 *
 * `config` is present exactly when no problem is an error.
 */
export function parseProvisionerConfig(text: string, options: ParseConfigOptions = {}): ProvisionerConfigResult {
  const { file, cpus = availableParallelism(), exists = () => true } = options;
  const problems: ConfigProblem[] = [];
  const error = (path: string, message: string): void => void problems.push({ path, message, severity: 'error' });
  const warn = (path: string, message: string): void => void problems.push({ path, message, severity: 'warning' });

  // yaml's own messages quote the text (an unquoted `token: *secret` is an "unresolved alias" named
  // after the secret): readYamlConfig says what is wrong in its own words, with the key's path.
  const read = readYamlConfig(text, {
    version: '1.1',
    merge: true,
    maxAliasCount: 100,
    secret: (path) => SECRET_KEYS.has(path.toLowerCase()),
  });
  if (read.problems.length > 0) {
    for (const p of read.problems) error(p.path === '' ? (file ?? 'configuration') : p.path, p.message);
    return { config: undefined, problems };
  }
  const raw: unknown = read.value ?? {};
  if (!isMapping(raw)) {
    error(file ?? 'configuration', `expected a mapping of keys to values at the top level, got ${describe(raw)}`);
    return { config: undefined, problems };
  }

  const folded = foldSection(raw, '', warn);
  // `incus:` left empty is null, which keeps the default (no feed) like any key: say so, since the
  // section's whole point is turning the feed on.
  if (isMapping(folded.rxfleet) && Object.entries(folded.rxfleet).some(([key, value]) => key.toLowerCase() === 'incus' && value === null)) {
    warn('rxfleet.incus', 'empty, so the Incus feed is off: write `incus: {}` to turn it on with every default');
  }
  for (const section of ['features', 'rxfleet'] as const) {
    if (isMapping(folded[section])) folded[section] = foldSection(folded[section], section, warn);
  }
  if (isMapping(folded.rxfleet) && isMapping(folded.rxfleet.incus))
    folded.rxfleet.incus = foldSection(folded.rxfleet.incus, 'rxfleet.incus', warn);
  for (const key of Object.keys(DEPRECATED_KEYS)) {
    if (key in folded) warn(key, `deprecated: ${DEPRECATED_KEYS[key]}`);
  }
  // A single server is as good as a list of one.
  for (const key of ['nats_servers', 'dns_servers']) {
    if (isMapping(folded.rxfleet) && typeof folded.rxfleet[key] === 'string') {
      folded.rxfleet[key] = folded.rxfleet[key]
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
    }
  }

  // Schema errors do not stop the checks below: every problem is reported in one run. A check
  // skips a key the schema already refused (its value may not even be of the right type).
  const refused = new Set<string>();
  if (!validateSchema(folded)) {
    for (const e of validateSchema.errors ?? []) {
      const path = errorPath(e);
      if (refused.has(path)) continue;
      refused.add(path);
      error(path, schemaMessage(e));
    }
  }
  const usable = (path: string): boolean =>
    ![...refused].some(
      (r) => r === path || path.startsWith(`${r}.`) || path.startsWith(`${r}[`) || r.startsWith(`${path}.`) || r.startsWith(`${path}[`),
    );

  const c = folded as unknown as RawConfig;
  const duration = (path: string, value: string, minimumMs: number, minimumText: string): number => {
    if (!usable(path)) return 0;
    try {
      const ms = parseChoriaDuration(value);
      if (ms < minimumMs) error(path, `expected ${minimumText}, got ${JSON.stringify(value)}`);
      return ms;
    } catch (e) {
      if (!(e instanceof DurationSyntaxError)) throw e;
      error(path, `invalid duration ${JSON.stringify(value)} (${e.message}); valid examples are 10m, 1h, 1d`);
      return 0;
    }
  };

  const intervalMs = duration(
    'interval',
    c.interval,
    MINUTE_MS,
    'at least 1m (interval is too small; valid example values are 10m or 10h)',
  );
  // Upstream reads an empty validity as its default, one year.
  const serverJwtValidity = c.server_jwt_validity === '' ? '1y' : c.server_jwt_validity;
  const serverJwtValidityMs = duration('server_jwt_validity', serverJwtValidity, 1, 'a duration greater than zero');
  if (serverJwtValidityMs > 0 && serverJwtValidityMs <= HOUR_MS) {
    warn(
      'server_jwt_validity',
      'is 1h or less: server JWTs that short are refused by upstream too and signed with this validity anyway after a warning',
    );
  }
  const shutdownGraceMs = duration('rxfleet.shutdown_grace', c.rxfleet.shutdown_grace, 0, 'a duration >= 0');
  const helperTimeoutMs = duration('rxfleet.helper_timeout', c.rxfleet.helper_timeout, 1, 'a duration greater than zero');
  const electionCandidateIntervalMs =
    c.rxfleet.election_candidate_interval === ''
      ? undefined
      : duration('rxfleet.election_candidate_interval', c.rxfleet.election_candidate_interval, 100, 'a duration of at least 100ms');

  const lifecycleComponent = c.lifecycle_component === '' ? 'provision_mode_server' : c.lifecycle_component;
  if (usable('lifecycle_component') && /[.>*]/.test(lifecycleComponent)) {
    error(
      'lifecycle_component',
      `invalid lifecycle component ${JSON.stringify(lifecycleComponent)}: it becomes a NATS subject token and must not contain ".", ">" or "*"`,
    );
  } else if (usable('lifecycle_component') && !isValidLifecycleComponent(lifecycleComponent)) {
    warn(
      'lifecycle_component',
      `${JSON.stringify(lifecycleComponent)} contains white space, which no NATS subject may: startup events cannot be listened for, so nodes are found by discovery only (upstream starts the same way)`,
    );
  }

  const levels = ['debug', 'info', 'warn', 'error', 'fatal'] as const;
  const logLevel: ProvisionerConfig['logLevel'] =
    c.loglevel === ''
      ? 'info'
      : (levels as readonly string[]).includes(c.loglevel)
        ? (c.loglevel as ProvisionerConfig['logLevel'])
        : 'warn';
  if (usable('loglevel') && c.loglevel !== '' && logLevel === 'warn' && c.loglevel !== 'warn') {
    warn(
      'loglevel',
      `${JSON.stringify(c.loglevel)} is not one of debug, info, warn, error or fatal: logging at warn, as upstream does with a level it does not know`,
    );
  }

  if (!usable('helper')) {
    // already reported
  } else if (c.helper.trim() === '') {
    warn('helper', 'not set: every node will fail at the helper step (cannot parse helper command: empty), as upstream');
  } else {
    const problem = helperCommandProblem(c.helper);
    if (problem !== undefined) warn('helper', `${problem}: every node will fail at the helper step, as upstream`);
  }

  (usable('cert_deny_list') ? c.cert_deny_list : []).forEach((entry, index) => {
    try {
      new CertDenyList([entry]);
    } catch (e) {
      if (!(e instanceof DenyPatternError)) throw e;
      error(`cert_deny_list[${index}]`, `expected a regular expression: ${e.message}`);
    }
  });

  const features = usable('features') ? { ...c.features } : { pki: false, jwt: false, ed25519: false, upgrades: false };
  if (features.pki === true && features.ed25519 === true) error('features', 'can only enable one of pki or ed25519 features');
  if (features.ed25519) features.jwt = true;
  if (features.jwt && c.jwt_verify_cert === '' && usable('jwt_verify_cert')) {
    warn(
      'jwt_verify_cert',
      `not set while features.${c.features.jwt ? 'jwt' : 'ed25519'} is on: every node will fail JWT validation (no JWT verification certificate configured), as upstream`,
    );
  }
  if (
    typeof c.jwt_verify_cert === 'string' &&
    c.jwt_verify_cert !== '' &&
    !exists(c.jwt_verify_cert) &&
    !/^[0-9a-fA-F]{64}$/.test(c.jwt_verify_cert)
  ) {
    warn(
      'jwt_verify_cert',
      'is neither an existing file nor a 64-character hex ed25519 public key: JWT validation will fail until the file exists',
    );
  }
  if (features.ed25519 && c.jwt_signing_key === '' && usable('jwt_signing_key'))
    warn(
      'jwt_signing_key',
      'not set while features.ed25519 is on: every node will fail when its server JWT is signed (no jwt signing key configured), as upstream',
    );
  for (const key of ['jwt_signing_key', 'jwt_signing_token'] as const) {
    if (typeof c[key] === 'string' && c[key] !== '' && !exists(c[key])) warn(key, `file ${JSON.stringify(c[key])} does not exist (yet)`);
  }
  if (features.upgrades && c.upgrades_repository === '' && c.upgrades_optional === false) {
    warn(
      'upgrades_repository',
      'not set while features.upgrades is on and upgrades_optional is false: every node the helper asks to upgrade will fail (updates_repository not configured for upgrades feature), as upstream',
    );
  }
  if (c.rxfleet.mode === 'active-active' && c.leader_election === true) {
    error(
      'rxfleet.mode',
      'active-active and leader_election are two ways of sharing one fleet: choose one (set leader_election: false for active-active)',
    );
  }
  const workers = c.workers === 0 ? cpus : c.workers;
  if (usable('workers') && usable('rxfleet.helper_processes') && c.rxfleet.helper_processes > 0 && c.rxfleet.helper_processes > workers) {
    warn(
      'rxfleet.helper_processes',
      `${c.rxfleet.helper_processes} processes for ${workers} workers: at most one request per worker is in flight, so the others stand idle`,
    );
  }
  const incus =
    c.rxfleet.incus === undefined || refused.has('rxfleet') || refused.has('rxfleet.incus')
      ? undefined
      : parseIncusFeed(c.rxfleet.incus, error, usable);
  if (problems.some((p) => p.severity === 'error')) return { config: undefined, problems };

  // A server URL's `user:password@` is taken out of it (the keys win), so no server logged or shown
  // carries a secret.
  const nats = splitNatsUrls(c.rxfleet.nats_servers.join(','));
  const config: ProvisionerConfig = {
    file,
    workers,
    interval: c.interval,
    intervalMs,
    logDestination: logDestination(c.logfile),
    logLevel,
    helper: c.helper,
    token: c.token,
    lifecycleComponent,
    choriaInsecure: c.choria_insecure,
    site: c.site,
    monitorPort: c.monitor_port,
    brokerProvisioningPassword: c.broker_provisioning_password,
    certDenyList: new CertDenyList(c.cert_deny_list).entries,
    jwtVerifyCert: c.jwt_verify_cert,
    jwtSigningKey: c.jwt_signing_key,
    jwtSigningToken: c.jwt_signing_token,
    serverJwtValidity,
    serverJwtValidityMs,
    leaderElection: c.leader_election,
    upgradesRepository: c.upgrades_repository,
    upgradesOptional: c.upgrades_optional,
    features,
    rxfleet: {
      natsServers: nats.servers,
      natsUser: c.rxfleet.nats_user ?? nats.credentials?.user,
      natsPassword: c.rxfleet.nats_password ?? nats.credentials?.password,
      natsCredentials: c.rxfleet.nats_credentials,
      queueCapacity: c.rxfleet.queue_capacity,
      shutdownGraceMs,
      helperTimeoutMs,
      electionApiPrefix: c.rxfleet.election_api_prefix,
      electionCandidateIntervalMs,
      dnsServers: c.rxfleet.dns_servers,
      logFormat: c.rxfleet.log_format === '' ? undefined : c.rxfleet.log_format,
      monitorHost: c.rxfleet.monitor_host === '' ? undefined : c.rxfleet.monitor_host,
      mode: c.rxfleet.mode,
      helperMode: c.rxfleet.helper_mode,
      helperProcesses: c.rxfleet.helper_processes === 0 ? Math.max(1, Math.min(workers, cpus)) : c.rxfleet.helper_processes,
      claimsBucket: c.rxfleet.claims_bucket,
      claimsApiPrefix: c.rxfleet.claims_api_prefix,
      incus,
    },
  };
  return { config, problems };
}

/** The config of a result without errors; otherwise throws {@link ConfigurationError} naming every error. */
export function requireValidConfig(result: ProvisionerConfigResult): ProvisionerConfig {
  if (result.config === undefined) throw new ConfigurationError(result.problems);
  return result.config;
}

/** Why a helper command line cannot be run, in upstream's words, or `undefined` when it can. */
export function helperCommandProblem(command: string): string | undefined {
  try {
    splitHelperCommand(command);
    return undefined;
  } catch (e) {
    if (e instanceof HelperCommandError) return e.message;
    throw e;
  }
}

interface RawConfig {
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
    queue_capacity: number;
    shutdown_grace: string;
    helper_timeout: string;
    election_api_prefix: string;
    election_candidate_interval: string;
    dns_servers: string[];
    log_format: '' | 'json' | 'logfmt' | 'pretty';
    monitor_host: string;
    mode: RxfleetSettings['mode'];
    helper_mode: RxfleetSettings['helperMode'];
    helper_processes: number;
    claims_bucket: string;
    claims_api_prefix: string;
    incus?: RawIncusFeed;
  };
}

function logDestination(logfile: string): LogDestination {
  if (logfile === '' || logfile === 'stdout') return 'stdout';
  if (logfile === 'stderr' || logfile === 'discard') return logfile;
  return { file: logfile };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Maps each key to its canonical spelling case-insensitively (Go's JSON rule: the last of two
 * spellings wins), drops keys set to null (Go leaves the default) and warns about unknown keys.
 */
function foldSection(
  section: Record<string, unknown>,
  prefix: keyof typeof SECTION_KEYS,
  warn: (path: string, message: string) => void,
): Record<string, unknown> {
  const known = SECTION_KEYS[prefix];
  const at = (key: string): string => (prefix === '' ? key : `${prefix}.${key}`);
  const out: Record<string, unknown> = {};
  const spelledAs = new Map<string, string>();
  for (const [key, value] of Object.entries(section)) {
    const canonical = known.find((k) => k === key) ?? known.find((k) => k.toLowerCase() === key.toLowerCase());
    if (canonical === undefined) {
      const hint = known.find((k) => editDistance(k, key.toLowerCase()) <= 2);
      warn(at(key), `unknown key, ignored${hint === undefined ? '' : ` (did you mean ${at(hint)}?)`}`);
      continue;
    }
    const earlier = spelledAs.get(canonical);
    if (earlier !== undefined) warn(at(canonical), `given twice (as ${earlier} and ${key}); the last one wins`);
    spelledAs.set(canonical, key);
    if (value === null) delete out[canonical];
    else out[canonical] = value;
  }
  return out;
}
