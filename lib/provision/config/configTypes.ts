/**
 * The provisioner's configuration as the rest of rxfleet sees it, once read: its settings, the
 * problems found reading it, and the error that carries them. `config.ts` reads it.
 */
import { IncusFeedSettings } from '../sightings/incusFeedConfig';
import type { LogFormat } from '../../logger';

/** One problem found in a configuration: the key's path, what was wrong or expected, how bad. */
export interface ConfigProblem {
  /** Dotted path of the key (`features.pki`, `cert_deny_list[2]`), or the file for file-level problems. */
  path: string;
  message: string;
  /** Errors refuse to start; warnings are logged and the daemon starts. */
  severity: 'error' | 'warning';
}

/** Where logs go (DECISIONS P6: stdout unless `logfile` names a file). */
export type LogDestination = 'stdout' | 'stderr' | 'discard' | { file: string };

/** The provisioner's configuration after validation, defaults and derived values. */
export interface ProvisionerConfig {
  /** The file it was read from, if any. */
  file: string | undefined;
  /** Worker count; `workers: 0` (the default) resolved to the number of CPUs. */
  workers: number;
  /** `interval` as written, and in milliseconds (at least one minute). */
  interval: string;
  intervalMs: number;
  logDestination: LogDestination;
  /** Default `info` (DECISIONS P6); a level upstream does not know means `warn`, as upstream. */
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'fatal';
  /** The helper command line, split shell-style when run. */
  helper: string;
  token: string;
  lifecycleComponent: string;
  choriaInsecure: boolean;
  site: string;
  /** 0: no monitoring endpoint. */
  monitorPort: number;
  brokerProvisioningPassword: string;
  /** After defaulting: upstream's four patterns when the file gives none. */
  certDenyList: string[];
  jwtVerifyCert: string;
  jwtSigningKey: string;
  jwtSigningToken: string;
  serverJwtValidity: string;
  serverJwtValidityMs: number;
  leaderElection: boolean;
  upgradesRepository: string;
  upgradesOptional: boolean;
  /** `jwt` is forced on by `ed25519`, as upstream. */
  features: { pki: boolean; jwt: boolean; ed25519: boolean; upgrades: boolean };
  /** rxfleet's own settings (the `rxfleet:` section). */
  rxfleet: RxfleetSettings;
}

/** The `rxfleet:` section: what the Go provisioner has no key for. */
export interface RxfleetSettings {
  /** Overrides the Choria config's `plugin.choria.middleware_hosts` when non-empty. */
  natsServers: string[];
  /** Override the NATS user/password (upstream: user `provisioner` + `broker_provisioning_password`). */
  natsUser: string | undefined;
  natsPassword: string | undefined;
  /** A NATS `.creds` file (JWT + nkey seed), for accounts set up that way. */
  natsCredentials: string | undefined;
  /**
   * A file holding the `pkcs11` security provider's token PIN, for a daemon without a terminal
   * (go-choria asks for the PIN on the terminal, which rxfleet does too when this is unset).
   */
  pkcs11PinFile: string | undefined;
  /** Admitted-but-not-started tickets held at most; default 50 000 (upstream's channel size). */
  queueCapacity: number;
  /** DECISIONS P9 grace period; default 30 s. */
  shutdownGraceMs: number;
  /** The helper's hard timeout; default 10 s (upstream's fixed value). */
  helperTimeoutMs: number;
  /**
   * Where the election's JetStream API is: `choria.streams` (default) through a Choria broker's
   * account imports, `$JS.API` on a plain JetStream server.
   */
  electionApiPrefix: string;
  /** The longest a candidate waits between attempts (DECISIONS P14); undefined: a quarter of the bucket TTL. */
  electionCandidateIntervalMs: number | undefined;
  /** DNS servers (`ip` or `ip:port`) asked for the brokers' SRV records; empty: the system's. */
  dnsServers: string[];
  /** How log lines are written; undefined: pretty on a terminal, JSON otherwise. */
  logFormat: LogFormat | undefined;
  /** The address `monitor_port` is served on; undefined: every interface, as upstream. */
  monitorHost: string | undefined;
  /** `active-active`: several instances share the fleet, each node claimed in a KV bucket (DECISIONS P16). */
  mode: 'single' | 'active-active';
  /** `persistent`: long-running helper processes speaking one JSON line each way (DECISIONS P17). */
  helperMode: 'per-node' | 'persistent';
  /** Persistent helper processes; `helper_processes: 0` (the default) resolved to min(workers, CPUs). */
  helperProcesses: number;
  /** The claims' JetStream KV bucket (active-active). */
  claimsBucket: string;
  /** Where the claims bucket's JetStream API is: `choria.streams` (default) or `$JS.API`. */
  claimsApiPrefix: string;
  /** The Incus feed (`rxfleet.incus:`): enriched instance events as a third sighting source; undefined: off. */
  incus: IncusFeedSettings | undefined;
  /**
   * The ceiling of a failing node's backoff (DECISIONS P22), ms: after k failed cycles in a row a
   * node is admitted again no sooner than min(ceiling, interval x (2^(k-1) - 1)) after the last;
   * 0: at every sighting, as upstream. Default one hour.
   */
  failureBackoffMs: number;
  /** The provisioning records (`rxfleet.records: true`, DECISIONS P21); undefined: off. */
  records: RecordSettings | undefined;
}

/** Where and how each cycle's record is kept (`rxfleet.records_*`). */
export interface RecordSettings {
  /** The JetStream stream (`records_stream`). */
  stream: string;
  /** The subject prefix: cycles on `<subject>.node.<node>`, instances on `<subject>.instance.<identity>`. */
  subject: string;
  /** Where the stream's JetStream API is, for making it (`records_create`). */
  apiPrefix: string;
  /** Make the stream at start when it is missing. */
  create: boolean;
  /** Its replicas when rxfleet makes it; 0: three on a cluster of brokers, else one. */
  replicas: number;
  /** The stream's limits when rxfleet makes it: age (ms), bytes (0: none), records per node. */
  maxAgeMs: number;
  maxBytes: number;
  perNode: number;
  /** How often each instance writes its own record (`records_every`), ms: status calls an instance silent for three of these gone. */
  everyMs: number;
}

/** The outcome of reading a configuration: the config when there is no error, and every problem. */
export interface ProvisionerConfigResult {
  config: ProvisionerConfig | undefined;
  problems: ConfigProblem[];
}

/** Thrown by {@link requireValidConfig}; `problems` holds every error and warning found. */
export class ConfigurationError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    const errors = problems.filter((p) => p.severity === 'error');
    super(`Provisioning could not be configured: ${errors.map((p) => `${p.path}: ${p.message}`).join('; ')}`);
    this.name = 'ConfigurationError';
  }
}

/** Options for {@link parseProvisionerConfig}. */
export interface ParseConfigOptions {
  /** Named in file-level problems and kept in the result. */
  file?: string;
  /** What `workers: 0` means; default `os.availableParallelism()`. */
  cpus?: number;
  /** How file names are checked for the warnings about missing files; default: not checked (the file loader passes `fs.existsSync`). */
  exists?: (path: string) => boolean;
}
