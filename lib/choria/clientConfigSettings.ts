/**
 * The settings of a Choria client configuration, read as go-choria reads them: `key = value`
 * lines (a later one winning), the environment's overrides, and each value as the type its key
 * wants, every problem reported with the file, line and key it is about.
 */
import { parseGoDuration } from '../duration';
import { withoutCredentials } from '../redact';
import {
  DEFAULTED_KEYS,
  ENVIRONMENT_OVERRIDES,
  SECURITY_PROVIDERS,
  parseMiddlewareHosts,
  unsupportedKeyWarning,
  type ChoriaConfigProblem,
  type SecurityProviderName,
} from './clientConfigKeys';

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

/** One setting as written: its value, and the line and file it came from (line 0: the environment). */
interface SettingLine {
  value: string;
  line: number;
  file: string | undefined;
}

/**
 * Each source's `key = value` lines, in order, a later line winning: `#` starts a comment line,
 * blank lines are skipped, surrounding space is trimmed, and a line that is not `key = value` is a
 * warning naming only what looks like its key (the rest may be a password written wrongly).
 */
export function readSettingLines(
  sources: ReadonlyArray<{ file: string | undefined; text: string; prefix: string }>,
  problems: ChoriaConfigProblem[],
): Map<string, SettingLine> {
  const settings = new Map<string, SettingLine>();
  for (const source of sources) {
    source.text.split(/\r?\n/).forEach((raw, index) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const eq = line.indexOf('=');
      if (eq <= 0) {
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
  return settings;
}

/** `<file>:<line> <key>`, the path of a problem. */
function at(source: string | undefined, line: number, key: string): string {
  return `${source ?? 'choria config'}:${line} ${key}`.trim();
}

/** The settings read, each value as the type its key wants; a value refused is a problem and its default used. */
export class ClientConfigSettings {
  constructor(
    private readonly settings: Map<string, SettingLine>,
    private readonly problems: ChoriaConfigProblem[],
    private readonly file: string | undefined,
    private readonly home: string | undefined,
  ) {}

  /**
   * As confkey sets a key: the environment variable wins where a file sets the key, and also
   * where only the default would, for a key with a default tag.
   */
  overrideFromEnvironment(env: Record<string, string | undefined> | undefined): void {
    for (const [key, variable] of Object.entries(ENVIRONMENT_OVERRIDES)) {
      const entry = this.settings.get(key);
      const value = env?.[variable];
      if (value === undefined) continue;
      if (entry !== undefined) this.settings.set(key, { ...entry, value: value.trim() });
      else if (DEFAULTED_KEYS.has(key)) this.settings.set(key, { value: value.trim(), line: 0, file: `$${variable}` });
    }
  }

  /** A warning for each key rxfleet reads differently from go-choria, or cannot honour. */
  warnAboutUnreadKeys(): void {
    const puppetSslDir = this.settings.get('plugin.security.puppet.ssldir');
    if (puppetSslDir !== undefined && puppetSslDir.value !== '')
      this.problems.push({
        path: at(puppetSslDir.file, puppetSslDir.line, 'plugin.security.puppet.ssldir'),
        message: this.settings.has('plugin.choria.ssldir')
          ? 'not a go-choria key: plugin.choria.ssldir is used, as go-choria uses it'
          : "not a go-choria key: rxfleet reads the Puppet SSL layout there, where go-choria would use its default directory (set plugin.choria.ssldir, go-choria's key); the certname is not affected",
        severity: 'warning',
      });
    for (const [key, entry] of this.settings) {
      const warning = unsupportedKeyWarning(key);
      if (warning !== undefined) this.problems.push({ path: at(entry.file, entry.line, key), message: warning, severity: 'warning' });
    }
  }

  /** A string, undefined when unset or empty; a file name starting `~` is in the home directory. */
  string(key: string): string | undefined {
    const v = this.settings.get(key)?.value;
    if (v === undefined || v === '') return undefined;
    return PATH_KEYS.has(key) && v.startsWith('~') && this.home !== undefined ? `${this.home}${v.slice(1)}` : v;
  }

  /** A boolean as go-choria reads one (`1`, `yes`, `true`, `y`, `t` and their opposites, any case); anything else is false, with a warning. */
  boolean(key: string, fallback: boolean): boolean {
    const entry = this.settings.get(key);
    if (entry === undefined || entry.value === '') return fallback;
    if (/^(1|yes|true|y|t)$/i.test(entry.value)) return true;
    if (/^(0|no|false|n|f)$/i.test(entry.value)) return false;
    this.refuse(
      entry,
      key,
      `expected a boolean (true, false, yes, no, 1, 0), got ${JSON.stringify(entry.value)}; read as false, as go-choria does`,
      'warning',
    );
    return false;
  }

  /** A whole number of seconds, at least 1. */
  seconds(key: string, fallback: number): number {
    const entry = this.settings.get(key);
    if (entry === undefined || entry.value === '') return fallback;
    if (!/^\d+$/.test(entry.value) || Number(entry.value) < 1) {
      this.refuse(entry, key, `expected a whole number of seconds >= 1, got ${JSON.stringify(entry.value)}`);
      return fallback;
    }
    return Number(entry.value);
  }

  /** Any whole number: a PKCS#11 slot id (SoftHSM numbers its slots in the billions). */
  wholeNumber(key: string, fallback: number): number {
    const entry = this.settings.get(key);
    if (entry === undefined || entry.value === '') return fallback;
    if (/^\d+$/.test(entry.value) && Number.isSafeInteger(Number(entry.value))) return Number(entry.value);
    this.refuse(entry, key, `expected a whole number, got ${JSON.stringify(entry.value)}`);
    return fallback;
  }

  /** `plugin.security.provider`: one go-choria knows; default `puppet`, as go-choria. */
  securityProvider(): SecurityProviderName {
    const provider = this.settings.get('plugin.security.provider');
    if (provider === undefined || provider.value === '') return 'puppet';
    if ((SECURITY_PROVIDERS as readonly string[]).includes(provider.value)) return provider.value as SecurityProviderName;
    this.refuse(
      provider,
      'plugin.security.provider',
      `expected one of ${SECURITY_PROVIDERS.join(', ')}, got ${JSON.stringify(provider.value)}`,
    );
    return 'puppet';
  }

  /**
   * `plugin.choria.middleware_hosts` as NATS URLs: a host that is no `host:port` refused, one
   * without a port given NATS's 4222 and one with `user:password` stripped of it, each with a warning.
   */
  middlewareHosts(): string[] {
    const hosts = this.settings.get('plugin.choria.middleware_hosts');
    if (hosts === undefined || hosts.value === '') return [];
    const parsed = parseMiddlewareHosts(hosts.value);
    for (const bad of parsed.invalid) {
      this.refuse(
        hosts,
        'plugin.choria.middleware_hosts',
        `expected host:port or nats://host:port, got ${JSON.stringify(withoutCredentials(bad))}`,
      );
    }
    if (parsed.withoutPort.length > 0)
      this.refuse(
        hosts,
        'plugin.choria.middleware_hosts',
        `${parsed.withoutPort.join(', ')} without a port: go-choria refuses it; rxfleet uses NATS's 4222`,
        'warning',
      );
    if (parsed.withCredentials > 0)
      this.refuse(
        hosts,
        'plugin.choria.middleware_hosts',
        'user:password in a host is dropped, as go-choria drops it: the login is plugin.nats.user and plugin.nats.pass (or the provisioner file)',
        'warning',
      );
    return parsed.urls;
  }

  /** `plugin.choria.network.connect_timeout` in ms: a Go duration, at most 120 s; default 2 s. */
  connectTimeoutMs(): number {
    const connectTimeout = this.settings.get('plugin.choria.network.connect_timeout');
    if (connectTimeout === undefined || connectTimeout.value === '') return 2000;
    const key = 'plugin.choria.network.connect_timeout';
    try {
      const ms = parseGoDuration(connectTimeout.value);
      if (ms > 120_000) this.refuse(connectTimeout, key, 'must not exceed 120 seconds (go-choria refuses to connect)');
      else if (ms > 0) return ms;
    } catch (error) {
      this.refuse(connectTimeout, key, (error as Error).message);
    }
    return 2000;
  }

  /** A problem with `key`'s value, at the line that set it. */
  private refuse(entry: SettingLine, key: string, message: string, severity: ChoriaConfigProblem['severity'] = 'error'): void {
    this.problems.push({ path: at(entry.file ?? this.file, entry.line, key), message, severity });
  }
}
