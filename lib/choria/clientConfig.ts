import { withoutCredentials } from '../redact';
import { hostname } from 'node:os';
import { parseGoDuration } from '../duration';
import { DEFAULTED_KEYS, ENVIRONMENT_OVERRIDES, parseMiddlewareHosts, unsupportedKeyWarning } from './clientConfigKeys';

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

/** The values go-choria accepts for `plugin.security.provider` (its validator refuses any other). */
export const SECURITY_PROVIDERS = ['puppet', 'file', 'pkcs11', 'certmanager', 'choria'] as const;

/** One of {@link SECURITY_PROVIDERS}. */
export type SecurityProviderName = (typeof SECURITY_PROVIDERS)[number];

/** One problem found in a Choria client configuration: where, and what was expected. */
export interface ChoriaConfigProblem {
  /** `<file>:<line>` followed by the key, e.g. `choria.cfg:4 discovery_timeout`. */
  path: string;
  message: string;
  /** Warnings do not stop the daemon; errors do. */
  severity: 'error' | 'warning';
}

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

/** The keys holding file names: a leading `~` is the home directory (go-choria's `path_string`). */
const PATH_KEYS = new Set([
  'plugin.security.file.certificate',
  'plugin.security.file.key',
  'plugin.security.file.ca',
  'plugin.security.choria.certificate',
  'plugin.security.choria.key',
  'plugin.security.choria.ca',
  'plugin.security.choria.seed_file',
  'plugin.security.choria.token_file',
  'plugin.choria.ssldir',
  'plugin.security.puppet.ssldir',
  'plugin.security.pkcs11.driver_file',
  'plugin.nats.credentials',
]);

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
  const settings = new Map<string, { value: string; line: number; file: string | undefined }>();
  const sources = [{ file, text, prefix: '' }, ...(options.dropIns ?? [])];
  const at = (source: string | undefined, line: number, key: string): string => `${source ?? 'choria config'}:${line} ${key}`.trim();
  for (const source of sources) {
    source.text.split(/\r?\n/).forEach((raw, index) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const eq = line.indexOf('=');
      if (eq <= 0) {
        // Only what looks like the key: the rest may be a password written with the wrong separator.
        const key = /^[A-Za-z0-9_.-]+/.exec(line)?.[0];
        problems.push({
          path: at(source.file, index + 1, ''),
          message: `expected "key = value"${key === undefined ? '' : ` (a line starting ${JSON.stringify(key)})`}; line ignored`,
          severity: 'warning',
        });
        return;
      }
      const key = `${source.prefix}${line.slice(0, eq).trim()}`;
      settings.set(key, { value: line.slice(eq + 1).trim(), line: index + 1, file: source.file });
    });
  }
  // As confkey sets a key: the environment variable wins where a file sets the key, and also
  // where only the default would, for a key with a default tag.
  for (const [key, variable] of Object.entries(ENVIRONMENT_OVERRIDES)) {
    const entry = settings.get(key);
    const value = options.env?.[variable];
    if (value === undefined) continue;
    if (entry !== undefined) settings.set(key, { ...entry, value: value.trim() });
    else if (DEFAULTED_KEYS.has(key)) settings.set(key, { value: value.trim(), line: 0, file: `$${variable}` });
  }
  const puppetSslDir = settings.get('plugin.security.puppet.ssldir');
  if (puppetSslDir !== undefined && puppetSslDir.value !== '')
    problems.push({
      path: at(puppetSslDir.file, puppetSslDir.line, 'plugin.security.puppet.ssldir'),
      message: settings.has('plugin.choria.ssldir')
        ? 'not a go-choria key: plugin.choria.ssldir is used, as go-choria uses it'
        : "not a go-choria key: rxfleet reads the Puppet SSL layout there, where go-choria would use its default directory (set plugin.choria.ssldir, go-choria's key); the certname is not affected",
      severity: 'warning',
    });
  for (const [key, entry] of settings) {
    const warning = unsupportedKeyWarning(key);
    if (warning !== undefined) problems.push({ path: at(entry.file, entry.line, key), message: warning, severity: 'warning' });
  }
  const where = (_line: number, key: string): string => {
    const entry = settings.get(key);
    return at(entry?.file ?? file, entry?.line ?? _line, key);
  };

  const stringSetting = (key: string): string | undefined => {
    const v = settings.get(key)?.value;
    if (v === undefined || v === '') return undefined;
    return PATH_KEYS.has(key) && v.startsWith('~') && options.home !== undefined ? `${options.home}${v.slice(1)}` : v;
  };
  const booleanSetting = (key: string, fallback: boolean): boolean => {
    const entry = settings.get(key);
    if (entry === undefined || entry.value === '') return fallback;
    if (/^(1|yes|true|y|t)$/i.test(entry.value)) return true;
    if (/^(0|no|false|n|f)$/i.test(entry.value)) return false;
    problems.push({
      path: where(entry.line, key),
      message: `expected a boolean (true, false, yes, no, 1, 0), got ${JSON.stringify(entry.value)}; read as false, as go-choria does`,
      severity: 'warning',
    });
    return false;
  };
  let securityProvider: SecurityProviderName = 'puppet';
  const provider = settings.get('plugin.security.provider');
  if (provider !== undefined && provider.value !== '') {
    if ((SECURITY_PROVIDERS as readonly string[]).includes(provider.value)) securityProvider = provider.value as SecurityProviderName;
    else
      problems.push({
        path: where(provider.line, 'plugin.security.provider'),
        message: `expected one of ${SECURITY_PROVIDERS.join(', ')}, got ${JSON.stringify(provider.value)}`,
        severity: 'error',
      });
  }
  const seconds = (key: string, fallback: number): number => {
    const entry = settings.get(key);
    if (entry === undefined || entry.value === '') return fallback;
    if (!/^\d+$/.test(entry.value) || Number(entry.value) < 1) {
      problems.push({
        path: where(entry.line, key),
        message: `expected a whole number of seconds >= 1, got ${JSON.stringify(entry.value)}`,
        severity: 'error',
      });
      return fallback;
    }
    return Number(entry.value);
  };

  // A PKCS#11 slot id: any whole number (SoftHSM numbers its slots in the billions).
  const wholeNumber = (key: string, fallback: number): number => {
    const entry = settings.get(key);
    if (entry === undefined || entry.value === '') return fallback;
    if (/^\d+$/.test(entry.value) && Number.isSafeInteger(Number(entry.value))) return Number(entry.value);
    problems.push({
      path: where(entry.line, key),
      message: `expected a whole number, got ${JSON.stringify(entry.value)}`,
      severity: 'error',
    });
    return fallback;
  };

  let middlewareHosts: string[] = [];
  const hosts = settings.get('plugin.choria.middleware_hosts');
  if (hosts !== undefined && hosts.value !== '') {
    const parsed = parseMiddlewareHosts(hosts.value);
    middlewareHosts = parsed.urls;
    const path = where(hosts.line, 'plugin.choria.middleware_hosts');
    for (const bad of parsed.invalid) {
      problems.push({
        path,
        message: `expected host:port or nats://host:port, got ${JSON.stringify(withoutCredentials(bad))}`,
        severity: 'error',
      });
    }
    if (parsed.withoutPort.length > 0)
      problems.push({
        path,
        message: `${parsed.withoutPort.join(', ')} without a port: go-choria refuses it; rxfleet uses NATS's 4222`,
        severity: 'warning',
      });
    if (parsed.withCredentials > 0)
      problems.push({
        path,
        message:
          'user:password in a host is dropped, as go-choria drops it: the login is plugin.nats.user and plugin.nats.pass (or the provisioner file)',
        severity: 'warning',
      });
  }
  let connectTimeoutMs = 2000;
  const connectTimeout = settings.get('plugin.choria.network.connect_timeout');
  if (connectTimeout !== undefined && connectTimeout.value !== '') {
    const path = where(connectTimeout.line, 'plugin.choria.network.connect_timeout');
    try {
      const ms = parseGoDuration(connectTimeout.value);
      if (ms > 120_000) problems.push({ path, message: 'must not exceed 120 seconds (go-choria refuses to connect)', severity: 'error' });
      else if (ms > 0) connectTimeoutMs = ms;
    } catch (error) {
      problems.push({ path, message: (error as Error).message, severity: 'error' });
    }
  }

  const config: ChoriaClientConfig = {
    file,
    identity: stringSetting('identity') ?? options.defaultIdentity ?? hostname(),
    middlewareHosts,
    useSrv: booleanSetting('plugin.choria.use_srv', true),
    srvDomain: stringSetting('plugin.choria.srv_domain'),
    securityProvider,
    certificate: stringSetting('plugin.security.file.certificate'),
    key: stringSetting('plugin.security.file.key'),
    ca: stringSetting('plugin.security.file.ca'),
    choriaCertificate: stringSetting('plugin.security.choria.certificate'),
    choriaKey: stringSetting('plugin.security.choria.key'),
    choriaCa: stringSetting('plugin.security.choria.ca'),
    seedFile: stringSetting('plugin.security.choria.seed_file'),
    tokenFile: stringSetting('plugin.security.choria.token_file'),
    sslDir: stringSetting('plugin.choria.ssldir') ?? stringSetting('plugin.security.puppet.ssldir'),
    certname: stringSetting('plugin.security.certname'),
    pkcs11DriverFile: stringSetting('plugin.security.pkcs11.driver_file'),
    pkcs11Slot: wholeNumber('plugin.security.pkcs11.slot', 0),
    natsUser: stringSetting('plugin.nats.user'),
    natsPassword: stringSetting('plugin.nats.pass'),
    natsCredentials: stringSetting('plugin.nats.credentials'),
    discoveryTimeoutSeconds: seconds('discovery_timeout', 2),
    requestTtlSeconds: seconds('ttl', 60),
    connectTimeoutMs,
  };
  // Reported in file order (the file, then its drop-ins), whatever order the keys were checked in.
  const order = (p: ChoriaConfigProblem): number => {
    const source = sources.findIndex((s) => s.file !== undefined && p.path.startsWith(`${s.file}:`));
    return Math.max(0, source) * 1e6 + Number(/:(\d+)/.exec(p.path)?.[1] ?? 0);
  };
  return { config, problems: [...problems].sort((a, b) => order(a) - order(b)) };
}
