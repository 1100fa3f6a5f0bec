import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { availableParallelism } from 'node:os';
import { readYamlConfig } from '../../yamlConfig';
import { DEPRECATED_KEYS, PROVISIONER_CONFIG_SCHEMA, SECTION_KEYS } from './configSchema';
import { splitNatsUrls } from '../../addresses';
import {
  ConfigProblem,
  ConfigurationError,
  LogDestination,
  ParseConfigOptions,
  ProvisionerConfig,
  ProvisionerConfigResult,
} from './configTypes';
import { describe, editDistance, errorPath, schemaMessage } from '../../configProblems';
import { CertDenyList } from '../credentials/certDenyList';
import { RawConfig, checkRules } from './configRules';

export { helperCommandProblem } from './configRules';

export { ConfigurationError } from './configTypes';
export type {
  ConfigProblem,
  LogDestination,
  ParseConfigOptions,
  ProvisionerConfig,
  ProvisionerConfigResult,
  RecordSettings,
  RxfleetSettings,
} from './configTypes';

/** Keys whose values are secrets: a problem names them and never what they hold (keys match in any case). */
const SECRET_KEYS = new Set(['token', 'broker_provisioning_password', 'rxfleet.nats_password']);

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
  // `failure_backoff: 0` (a number) is the off switch people write: read it as the duration "0".
  if (isMapping(folded.rxfleet)) {
    for (const [key, value] of Object.entries(folded.rxfleet)) if (key === 'failure_backoff' && value === 0) folded.rxfleet[key] = '0';
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
      error(path, schemaMessage(PROVISIONER_CONFIG_SCHEMA, e));
    }
  }
  const usable = (path: string): boolean =>
    ![...refused].some(
      (r) => r === path || path.startsWith(`${r}.`) || path.startsWith(`${r}[`) || r.startsWith(`${path}.`) || r.startsWith(`${path}[`),
    );

  const c = folded as unknown as RawConfig;
  const {
    intervalMs,
    serverJwtValidity,
    serverJwtValidityMs,
    shutdownGraceMs,
    helperTimeoutMs,
    electionCandidateIntervalMs,
    lifecycleComponent,
    logLevel,
    features,
    workers,
    incus,
    failureBackoffMs,
    recordsMaxAgeMs,
    recordsEveryMs,
  } = checkRules(c, { error, warn, usable, refused, exists, cpus });
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
      pkcs11PinFile: c.rxfleet.pkcs11_pin_file,
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
      failureBackoffMs,
      records: c.rxfleet.records
        ? {
            stream: c.rxfleet.records_stream,
            subject: c.rxfleet.records_subject,
            apiPrefix: c.rxfleet.records_api_prefix,
            create: c.rxfleet.records_create,
            replicas: c.rxfleet.records_replicas,
            maxAgeMs: recordsMaxAgeMs,
            maxBytes: c.rxfleet.records_max_bytes,
            perNode: c.rxfleet.records_per_node,
            everyMs: recordsEveryMs,
          }
        : undefined,
    },
  };
  return { config, problems };
}

/** The config of a result without errors; otherwise throws {@link ConfigurationError} naming every error. */
export function requireValidConfig(result: ProvisionerConfigResult): ProvisionerConfig {
  if (result.config === undefined) throw new ConfigurationError(result.problems);
  return result.config;
}

/** go-choria's `CommonLogOpener`: `stdout`, `stderr` and `discard` in any case are streams; anything else a file. */
function logDestination(logfile: string): LogDestination {
  const word = logfile.toLowerCase();
  if (word === '' || word === 'stdout') return 'stdout';
  if (word === 'stderr' || word === 'discard') return word;
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
