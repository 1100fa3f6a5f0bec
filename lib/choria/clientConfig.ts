import { hostname } from 'node:os';
import { ClientConfigSettings, readSettingLines } from './clientConfigSettings';
import type { ChoriaConfigProblem, SecurityProviderName } from './clientConfigKeys';

export { parseMiddlewareHosts } from './clientConfigKeys';

/**
 * The part of a Choria client configuration (`choria.cfg`, `client.conf`) the provisioner reads.
 * Every other key in the file is accepted and ignored: the same file serves other Choria tools.
 */
export interface ChoriaClientConfig {
  /** The file it came from, or `undefined` when built from defaults only. */
  file: string | undefined;
  /** `identity`; default the host's fully qualified name. */
  identity: string;
  /** `plugin.choria.middleware_hosts` as NATS URLs (`nats://host:port`); empty when unset. */
  middlewareHosts: string[];
  /** `plugin.choria.use_srv`: ask DNS SRV records for brokers when none are listed; default true. */
  useSrv: boolean;
  /** `plugin.choria.srv_domain`: the domain of those records; default the host's domain. */
  srvDomain: string | undefined;
  /** `plugin.security.provider`; default `puppet`, as go-choria. */
  securityProvider: SecurityProviderName;
  /** `plugin.security.file.certificate|key|ca`, for the `file` provider; undefined when unset. */
  certificate: string | undefined;
  key: string | undefined;
  ca: string | undefined;
  /** `plugin.security.choria.certificate|key|ca`: the `choria` provider's optional TLS material. */
  choriaCertificate: string | undefined;
  choriaKey: string | undefined;
  choriaCa: string | undefined;
  /** `plugin.security.choria.seed_file|token_file`, for the `choria` (org issuer) provider. */
  seedFile: string | undefined;
  tokenFile: string | undefined;
  /**
   * The Puppet SSL directory of the `puppet` provider: `plugin.choria.ssldir` (go-choria's key), or
   * `plugin.security.puppet.ssldir`; undefined: the provider's default.
   */
  sslDir: string | undefined;
  /** `plugin.security.certname`: the `puppet` provider's certificate name; undefined: go-choria's default. */
  certname: string | undefined;
  /** `plugin.security.pkcs11.driver_file`: the `pkcs11` provider's PKCS#11 module (a `.so`); undefined when unset. */
  pkcs11DriverFile: string | undefined;
  /** `plugin.security.pkcs11.slot`: the slot id of the `pkcs11` provider's token; default 0, as go-choria. */
  pkcs11Slot: number;
  /** `plugin.nats.user|pass|credentials`: the NATS login when the provisioner file sets none. */
  natsUser: string | undefined;
  natsPassword: string | undefined;
  natsCredentials: string | undefined;
  /** `discovery_timeout` in seconds; default 2. */
  discoveryTimeoutSeconds: number;
  /** `ttl` of requests in seconds; default 60. */
  requestTtlSeconds: number;
  /** `plugin.choria.network.connect_timeout` in ms (the NATS connection's timeout); default 2 s, at most 120 s. */
  connectTimeoutMs: number;
}

export { SECURITY_PROVIDERS, type SecurityProviderName, type ChoriaConfigProblem } from './clientConfigKeys';

/** The result of reading a Choria client configuration: the values and every problem found. */
export interface ChoriaConfigResult {
  config: ChoriaClientConfig;
  problems: ChoriaConfigProblem[];
}

/** Options for {@link parseChoriaClientConfig}. */
export interface ParseChoriaConfigOptions {
  /** Named in problem paths. */
  file?: string;
  /** The identity when the file sets none; default `os.hostname()`. */
  defaultIdentity?: string;
  /** The home directory a path starting `~` is expanded with, as go-choria does; unset: left as written. */
  home?: string;
  /**
   * Files read after this one, whose lines win, in order: go-choria's `plugin.d/choria.cfg` beside
   * the file (its keys under `plugin.choria.`: `use_srv = false` is `plugin.choria.use_srv`), then
   * the project's `choria.conf` files, from the root down to the working directory (no prefix).
   */
  dropIns?: Array<{ file: string; text: string; prefix: string }>;
  /** The environment the overrides of {@link ENVIRONMENT_OVERRIDES} are read from; unset: none. */
  env?: Record<string, string | undefined>;
}

/**
 * Parses Choria's `key = value` format: one setting a line, `#` starts a comment line, blank lines
 * are skipped, surrounding space is trimmed and a later line wins over an earlier one. A line that
 * is not `key = value` is reported as a warning (upstream ignores it silently); a value that cannot
 * be used (a middleware host that is not `host:port`, a timeout that is not a whole number, a
 * security provider go-choria does not know) is an error. Defaults are go-choria's: the `puppet`
 * security provider, SRV lookups on; booleans read as go-choria reads them (`1`, `yes`, `true`, `y`,
 * `t` and their opposites, any case; anything else is false, with a warning); a file name starting
 * `~` is in `home`. Every problem is collected; the returned config always holds usable values
 * (defaults where a value was refused).
 */
export function parseChoriaClientConfig(text: string, options: ParseChoriaConfigOptions = {}): ChoriaConfigResult {
  const file = options.file;
  const problems: ChoriaConfigProblem[] = [];
  const sources = [{ file, text, prefix: '' }, ...(options.dropIns ?? [])];
  const read = new ClientConfigSettings(readSettingLines(sources, problems), problems, file, options.home);
  read.overrideFromEnvironment(options.env);
  read.warnAboutUnreadKeys();
  const securityProvider = read.securityProvider();
  const middlewareHosts = read.middlewareHosts();
  const connectTimeoutMs = read.connectTimeoutMs();
  const config: ChoriaClientConfig = {
    file,
    identity: read.string('identity') ?? options.defaultIdentity ?? hostname(),
    middlewareHosts,
    useSrv: read.boolean('plugin.choria.use_srv', true),
    srvDomain: read.string('plugin.choria.srv_domain'),
    securityProvider,
    certificate: read.string('plugin.security.file.certificate'),
    key: read.string('plugin.security.file.key'),
    ca: read.string('plugin.security.file.ca'),
    choriaCertificate: read.string('plugin.security.choria.certificate'),
    choriaKey: read.string('plugin.security.choria.key'),
    choriaCa: read.string('plugin.security.choria.ca'),
    seedFile: read.string('plugin.security.choria.seed_file'),
    tokenFile: read.string('plugin.security.choria.token_file'),
    sslDir: read.string('plugin.choria.ssldir') ?? read.string('plugin.security.puppet.ssldir'),
    certname: read.string('plugin.security.certname'),
    pkcs11DriverFile: read.string('plugin.security.pkcs11.driver_file'),
    pkcs11Slot: read.wholeNumber('plugin.security.pkcs11.slot', 0),
    natsUser: read.string('plugin.nats.user'),
    natsPassword: read.string('plugin.nats.pass'),
    natsCredentials: read.string('plugin.nats.credentials'),
    discoveryTimeoutSeconds: read.seconds('discovery_timeout', 2),
    requestTtlSeconds: read.seconds('ttl', 60),
    connectTimeoutMs,
  };
  // Reported in file order (the file, then its drop-ins), whatever order the keys were checked in.
  const order = (p: ChoriaConfigProblem): number => {
    const source = sources.findIndex((s) => s.file !== undefined && p.path.startsWith(`${s.file}:`));
    return Math.max(0, source) * 1e6 + Number(/:(\d+)/.exec(p.path)?.[1] ?? 0);
  };
  return { config, problems: [...problems].sort((a, b) => order(a) - order(b)) };
}
