import { hostname } from 'node:os';
import { redactUrlCredentials } from '../redact';

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
  /** `plugin.security.provider` (`file`, `choria`...); default `file`. */
  securityProvider: string;
  /** `plugin.security.file.certificate|key|ca`; undefined when unset. */
  certificate: string | undefined;
  key: string | undefined;
  ca: string | undefined;
  /** `plugin.security.choria.seed_file|token_file`, for the `choria` (org issuer) provider. */
  seedFile: string | undefined;
  tokenFile: string | undefined;
  /** `discovery_timeout` in seconds; default 2. */
  discoveryTimeoutSeconds: number;
  /** `ttl` of requests in seconds; default 60. */
  requestTtlSeconds: number;
}

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
}

/**
 * Parses Choria's `key = value` format: one setting a line, `#` starts a comment line, blank lines
 * are skipped, surrounding space is trimmed and a later line wins over an earlier one. A line that
 * is not `key = value` is reported as a warning (upstream ignores it silently); a value that cannot
 * be used (a middleware host that is not `host:port`, a timeout that is not a whole number) is an
 * error. Every problem is collected; the returned config always holds usable values (defaults where
 * a value was refused).
 */
export function parseChoriaClientConfig(text: string, options: ParseChoriaConfigOptions = {}): ChoriaConfigResult {
  const file = options.file;
  const where = (line: number, key: string): string => `${file ?? 'choria config'}:${line} ${key}`.trim();
  const problems: ChoriaConfigProblem[] = [];
  const settings = new Map<string, { value: string; line: number }>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const eq = line.indexOf('=');
    if (eq <= 0) {
      problems.push({ path: where(index + 1, ''), message: `expected "key = value", got ${JSON.stringify(redactUrlCredentials(line))}; line ignored`, severity: 'warning' });
      return;
    }
    settings.set(line.slice(0, eq).trim(), { value: line.slice(eq + 1).trim(), line: index + 1 });
  });

  const stringSetting = (key: string): string | undefined => {
    const v = settings.get(key)?.value;
    return v === undefined || v === '' ? undefined : v;
  };
  const seconds = (key: string, fallback: number): number => {
    const entry = settings.get(key);
    if (entry === undefined || entry.value === '') return fallback;
    if (!/^\d+$/.test(entry.value) || Number(entry.value) < 1) {
      problems.push({ path: where(entry.line, key), message: `expected a whole number of seconds >= 1, got ${JSON.stringify(entry.value)}`, severity: 'error' });
      return fallback;
    }
    return Number(entry.value);
  };

  let middlewareHosts: string[] = [];
  const hosts = settings.get('plugin.choria.middleware_hosts');
  if (hosts !== undefined && hosts.value !== '') {
    const parsed = parseMiddlewareHosts(hosts.value);
    middlewareHosts = parsed.urls;
    for (const bad of parsed.invalid) {
      problems.push({ path: where(hosts.line, 'plugin.choria.middleware_hosts'), message: `expected host:port or nats://host:port, got ${JSON.stringify(redactUrlCredentials(bad))}`, severity: 'error' });
    }
  }

  const config: ChoriaClientConfig = {
    file,
    identity: stringSetting('identity') ?? options.defaultIdentity ?? hostname(),
    middlewareHosts,
    securityProvider: stringSetting('plugin.security.provider') ?? 'file',
    certificate: stringSetting('plugin.security.file.certificate'),
    key: stringSetting('plugin.security.file.key'),
    ca: stringSetting('plugin.security.file.ca'),
    seedFile: stringSetting('plugin.security.choria.seed_file'),
    tokenFile: stringSetting('plugin.security.choria.token_file'),
    discoveryTimeoutSeconds: seconds('discovery_timeout', 2),
    requestTtlSeconds: seconds('ttl', 60),
  };
  // Reported in file order, whatever order the keys were checked in.
  const lineOf = (p: ChoriaConfigProblem): number => Number(/:(\d+)/.exec(p.path)?.[1] ?? 0);
  return { config, problems: [...problems].sort((a, b) => lineOf(a) - lineOf(b)) };
}

/**
 * Splits `plugin.choria.middleware_hosts`: comma-separated `host:port`, `nats://host:port` or
 * `tls://host:port` (an IPv6 host in brackets), returned as `nats://host:port` / `tls://host:port`
 * URLs. A host without a port gets NATS's 4222. Entries that are not host:port are returned in
 * `invalid`, never thrown.
 */
export function parseMiddlewareHosts(value: string): { urls: string[]; invalid: string[] } {
  const urls: string[] = [];
  const invalid: string[] = [];
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const m = /^(?:(nats|tls):\/\/)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(?::(\d{1,5}))?$/.exec(entry);
    const port = m?.[3] === undefined ? 4222 : Number(m[3]);
    if (m === null || port < 1 || port > 65535) {
      invalid.push(entry);
      continue;
    }
    urls.push(`${m[1] ?? 'nats'}://${m[2]}:${port}`);
  }
  return { urls, invalid };
}
