/**
 * The rules of a provisioner configuration that one key's schema cannot say: durations and their
 * minimums, values upstream would misread, and what upstream would only meet while provisioning
 * each node (reported as warnings). `config.ts` reads the file and calls {@link checkRules} once the
 * schema has run; every problem goes to `error` or `warn`, never thrown.
 */
import { DurationSyntaxError, parseChoriaDuration } from '../../choria/duration';
import { isValidLifecycleComponent } from '../../choria/lifecycleComponent';
import { CertDenyList, DenyPatternError } from '../credentials/certDenyList';
import { HelperCommandError, splitHelperCommand } from '../helper/helperCommand';
import { RawIncusFeed, parseIncusFeed } from '../sightings/incusFeedConfig';
import { ProvisionerConfig, RxfleetSettings } from './configTypes';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/** The file's keys after folding and the schema's defaults, as the schema promises them. */
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

/** Where {@link checkRules} reports, and what it needs to know of the machine and the schema's verdict. */
export interface RuleContext {
  error(path: string, message: string): void;
  warn(path: string, message: string): void;
  /** False for a key the schema already refused (its value may not even be of the right type). */
  usable(path: string): boolean;
  /** The keys the schema refused. */
  refused: ReadonlySet<string>;
  exists(file: string): boolean;
  cpus: number;
}

/** The values the rules compute, each valid only when no error was reported. */
export interface CheckedValues {
  intervalMs: number;
  serverJwtValidity: string;
  serverJwtValidityMs: number;
  shutdownGraceMs: number;
  helperTimeoutMs: number;
  electionCandidateIntervalMs: number | undefined;
  lifecycleComponent: string;
  logLevel: ProvisionerConfig['logLevel'];
  features: ProvisionerConfig['features'];
  workers: number;
  incus: RxfleetSettings['incus'];
  failureBackoffMs: number;
  recordsMaxAgeMs: number;
  recordsEveryMs: number;
}

/** Checks every cross-key rule of `c`, reporting through `ctx`, and returns the values they compute. */
export function checkRules(c: RawConfig, ctx: RuleContext): CheckedValues {
  const { error, warn, usable, refused, exists, cpus } = ctx;
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

  // "0" is no Choria duration (it needs a unit) but is how the backoff is turned off.
  const failureBackoffMs = /^\s*0\s*$/.test(c.rxfleet.failure_backoff)
    ? 0
    : duration('rxfleet.failure_backoff', c.rxfleet.failure_backoff, 0, 'a duration >= 0 (0: every sighting, as upstream)');
  const recordsEveryMs = duration('rxfleet.records_every', c.rxfleet.records_every, 1000, 'a duration of at least 1s such as 10s');
  const recordsMaxAgeMs = duration('rxfleet.records_max_age', c.rxfleet.records_max_age, MINUTE_MS, 'a duration of at least 1m such as 7d');

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
  // Unset: upstream's warn when lines go to a log file, as go-choria's logging reads an empty
  // level; rxfleet's info when they go to stdout (P6).
  // A logfile of the wrong type is refused on its own; it names no file here.
  const logsToFile = typeof c.logfile === 'string' && !['', 'stdout', 'stderr', 'discard'].includes(c.logfile.toLowerCase());
  const logLevel: ProvisionerConfig['logLevel'] =
    c.loglevel === ''
      ? logsToFile
        ? 'warn'
        : 'info'
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
  return {
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
  };
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
