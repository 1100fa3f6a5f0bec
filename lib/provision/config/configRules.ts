/**
 * From the file's document to the provisioner's settings: the rules one key's schema cannot say
 * (durations and their minimums, values upstream would misread, and what upstream would only meet
 * while provisioning each node, reported as warnings) and the values they resolve. `config.ts`
 * reads the file, folds its keys and runs the schema, then calls {@link configFromDocument}; every
 * problem goes to `error` or `warn`, never thrown.
 */
import { DurationSyntaxError, parseChoriaDuration } from '../../choria/duration';
import { isValidLifecycleComponent } from '../../choria/lifecycleComponent';
import { CertDenyList, DenyPatternError } from '../credentials/certDenyList';
import { HelperCommandError, splitHelperCommand } from '../helper/helperCommand';
import { parseIncusFeed } from '../sightings/incusFeedConfig';
import { splitNatsUrls } from '../../addresses';
import { LogDestination, ProvisionerConfig, RecordSettings } from './configTypes';
import type { RawConfig } from './configSchema';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;

/** Where {@link configFromDocument} reports, and what it needs to know of the machine and the schema's verdict. */
export interface RuleContext {
  error(path: string, message: string): void;
  warn(path: string, message: string): void;
  /** False for a key the schema already refused (its value may not even be of the right type). */
  usable(path: string): boolean;
  /** The keys the schema refused. */
  refused: ReadonlySet<string>;
  exists(file: string): boolean;
  cpus: number;
  /** Whether an error has been reported: no settings are made then. */
  failed(): boolean;
}

/**
 * The settings `c` says, every rule checked on the way in the order the problems are reported
 * (durations first, then each key that needs more than its schema); undefined once an error was.
 */
export function configFromDocument(c: RawConfig, ctx: RuleContext, file: string | undefined): ProvisionerConfig | undefined {
  const durations = checkDurations(c, ctx);
  const lifecycleComponent = checkLifecycleComponent(c, ctx);
  const logLevel = checkLogLevel(c, ctx);
  checkHelper(c, ctx);
  checkCertDenyList(c, ctx);
  const features = checkFeatures(c, ctx);
  if (c.rxfleet.mode === 'active-active' && c.leader_election === true) {
    ctx.error(
      'rxfleet.mode',
      'active-active and leader_election are two ways of sharing one fleet: choose one (set leader_election: false for active-active)',
    );
  }
  const workers = checkWorkers(c, ctx);
  const incus =
    c.rxfleet.incus === undefined || ctx.refused.has('rxfleet') || ctx.refused.has('rxfleet.incus')
      ? undefined
      : parseIncusFeed(c.rxfleet.incus, ctx.error, ctx.usable);
  if (ctx.failed()) return undefined;
  // A server URL's `user:password@` is taken out of it (the keys win), so no server logged or shown
  // carries a secret.
  const nats = splitNatsUrls(c.rxfleet.nats_servers.join(','));
  return {
    file,
    workers,
    interval: c.interval,
    intervalMs: durations.intervalMs,
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
    serverJwtValidity: durations.serverJwtValidity,
    serverJwtValidityMs: durations.serverJwtValidityMs,
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
      shutdownGraceMs: durations.shutdownGraceMs,
      helperTimeoutMs: durations.helperTimeoutMs,
      electionApiPrefix: c.rxfleet.election_api_prefix,
      electionCandidateIntervalMs: durations.electionCandidateIntervalMs,
      dnsServers: c.rxfleet.dns_servers,
      logFormat: c.rxfleet.log_format === '' ? undefined : c.rxfleet.log_format,
      monitorHost: c.rxfleet.monitor_host === '' ? undefined : c.rxfleet.monitor_host,
      mode: c.rxfleet.mode,
      helperMode: c.rxfleet.helper_mode,
      helperProcesses: c.rxfleet.helper_processes === 0 ? Math.max(1, Math.min(workers, ctx.cpus)) : c.rxfleet.helper_processes,
      claimsBucket: c.rxfleet.claims_bucket,
      claimsApiPrefix: c.rxfleet.claims_api_prefix,
      incus,
      failureBackoffMs: durations.failureBackoffMs,
      records: c.rxfleet.records ? recordSettings(c, durations) : undefined,
    },
  };
}

/** Every duration of the file in milliseconds, under the setting it becomes (0 where it was refused). */
interface Durations {
  intervalMs: number;
  /** As written, or upstream's default for an empty one (`1y`). */
  serverJwtValidity: string;
  serverJwtValidityMs: number;
  shutdownGraceMs: number;
  helperTimeoutMs: number;
  electionCandidateIntervalMs: number | undefined;
  failureBackoffMs: number;
  recordsMaxAgeMs: number;
  recordsEveryMs: number;
}

/** Reads each duration key, refusing one that does not parse or is under its minimum. */
function checkDurations(c: RawConfig, { error, warn, usable }: RuleContext): Durations {
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
  return {
    intervalMs,
    serverJwtValidity,
    serverJwtValidityMs,
    shutdownGraceMs: duration('rxfleet.shutdown_grace', c.rxfleet.shutdown_grace, 0, 'a duration >= 0'),
    helperTimeoutMs: duration('rxfleet.helper_timeout', c.rxfleet.helper_timeout, 1, 'a duration greater than zero'),
    electionCandidateIntervalMs:
      c.rxfleet.election_candidate_interval === ''
        ? undefined
        : duration('rxfleet.election_candidate_interval', c.rxfleet.election_candidate_interval, 100, 'a duration of at least 100ms'),
    // "0" is no Choria duration (it needs a unit) but is how the backoff is turned off.
    failureBackoffMs: /^\s*0\s*$/.test(c.rxfleet.failure_backoff)
      ? 0
      : duration('rxfleet.failure_backoff', c.rxfleet.failure_backoff, 0, 'a duration >= 0 (0: every sighting, as upstream)'),
    recordsEveryMs: duration('rxfleet.records_every', c.rxfleet.records_every, 1000, 'a duration of at least 1s such as 10s'),
    recordsMaxAgeMs: duration('rxfleet.records_max_age', c.rxfleet.records_max_age, MINUTE_MS, 'a duration of at least 1m such as 7d'),
  };
}

/** The lifecycle component startup events are listened for (upstream's default when empty). */
function checkLifecycleComponent(c: RawConfig, { error, warn, usable }: RuleContext): string {
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
  return lifecycleComponent;
}

/**
 * The log level. Unset: upstream's warn when lines go to a log file, as go-choria's logging reads
 * an empty level; rxfleet's info when they go to stdout (P6). A level upstream does not know is
 * warn, as upstream, with a warning.
 */
function checkLogLevel(c: RawConfig, { warn, usable }: RuleContext): ProvisionerConfig['logLevel'] {
  const levels = ['debug', 'info', 'warn', 'error', 'fatal'] as const;
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
  return logLevel;
}

/** Warns about a helper every node would fail on: none, or one that cannot be split into words. */
function checkHelper(c: RawConfig, { warn, usable }: RuleContext): void {
  if (!usable('helper')) return;
  if (c.helper.trim() === '') {
    warn('helper', 'not set: every node will fail at the helper step (cannot parse helper command: empty), as upstream');
    return;
  }
  const problem = helperCommandProblem(c.helper);
  if (problem !== undefined) warn('helper', `${problem}: every node will fail at the helper step, as upstream`);
}

/** Refuses a deny-list pattern that does not compile (upstream never matches it, turning the check off). */
function checkCertDenyList(c: RawConfig, { error, usable }: RuleContext): void {
  (usable('cert_deny_list') ? c.cert_deny_list : []).forEach((entry, index) => {
    try {
      new CertDenyList([entry]);
    } catch (e) {
      if (!(e instanceof DenyPatternError)) throw e;
      error(`cert_deny_list[${index}]`, `expected a regular expression: ${e.message}`);
    }
  });
}

/**
 * The features, `jwt` forced on by `ed25519` as upstream; pki with ed25519 refused, and a warning
 * for each file a feature needs and does not have.
 */
function checkFeatures(c: RawConfig, { error, warn, usable, exists }: RuleContext): ProvisionerConfig['features'] {
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
  return features;
}

/** The workers (`0`: one per CPU), warning when persistent helpers outnumber them. */
function checkWorkers(c: RawConfig, { warn, usable, cpus }: RuleContext): number {
  const workers = c.workers === 0 ? cpus : c.workers;
  if (usable('workers') && usable('rxfleet.helper_processes') && c.rxfleet.helper_processes > 0 && c.rxfleet.helper_processes > workers) {
    warn(
      'rxfleet.helper_processes',
      `${c.rxfleet.helper_processes} processes for ${workers} workers: at most one request per worker is in flight, so the others stand idle`,
    );
  }
  return workers;
}

/** The records' settings (`rxfleet.records: true`). */
function recordSettings(c: RawConfig, durations: Durations): RecordSettings {
  return {
    stream: c.rxfleet.records_stream,
    subject: c.rxfleet.records_subject,
    apiPrefix: c.rxfleet.records_api_prefix,
    create: c.rxfleet.records_create,
    replicas: c.rxfleet.records_replicas,
    maxAgeMs: durations.recordsMaxAgeMs,
    maxBytes: c.rxfleet.records_max_bytes,
    perNode: c.rxfleet.records_per_node,
    everyMs: durations.recordsEveryMs,
  };
}

/** go-choria's `CommonLogOpener`: `stdout`, `stderr` and `discard` in any case are streams; anything else a file. */
function logDestination(logfile: string): LogDestination {
  const word = logfile.toLowerCase();
  if (word === '' || word === 'stdout') return 'stdout';
  if (word === 'stderr' || word === 'discard') return word;
  return { file: logfile };
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
