/**
 * The parts of go-choria's client configuration that are more than `key = value`: which keys an
 * environment variable overrides, `plugin.d/` drop-ins, the middleware host forms, and the keys
 * go-choria reads that rxfleet cannot honour (each said once, with what rxfleet does instead).
 */

/** One problem found in a Choria client configuration: where, and what was expected. */
export interface ChoriaConfigProblem {
  /** `<file>:<line>` followed by the key, e.g. `choria.cfg:4 discovery_timeout`. */
  path: string;
  message: string;
  /** Warnings do not stop the daemon; errors do. */
  severity: 'error' | 'warning';
}

/** The values go-choria accepts for `plugin.security.provider` (its validator refuses any other). */
export const SECURITY_PROVIDERS = ['puppet', 'file', 'pkcs11', 'certmanager', 'choria'] as const;

/** One of {@link SECURITY_PROVIDERS}. */
export type SecurityProviderName = (typeof SECURITY_PROVIDERS)[number];

/**
 * go-choria's `environment:` tags on the keys rxfleet reads (`config/choria.go`). As confkey sets
 * them, the variable replaces a value a file sets; for the keys of {@link DEFAULTED_KEYS} also the
 * default, so there it applies with no key in any file.
 */
export const ENVIRONMENT_OVERRIDES: Readonly<Record<string, string>> = {
  'plugin.choria.srv_domain': 'CHORIA_SRV_DOMAIN',
  'plugin.nats.user': 'MCOLLECTIVE_NATS_USERNAME',
  'plugin.nats.pass': 'MCOLLECTIVE_NATS_PASSWORD',
  'plugin.nats.credentials': 'MCOLLECTIVE_NATS_CREDENTIALS',
};

/**
 * The keys of {@link ENVIRONMENT_OVERRIDES} with a `default:` tag (go-choria 0.30.0's
 * `plugin.choria.srv_domain`, `default:""`): confkey sets every default through the same function
 * that reads the environment, so `CHORIA_SRV_DOMAIN` is used even where no file has the key.
 */
export const DEFAULTED_KEYS: ReadonlySet<string> = new Set(['plugin.choria.srv_domain']);

/**
 * Keys go-choria reads whose feature rxfleet does not have, by prefix, with what rxfleet does
 * instead. Each key present is one warning line: never ignored silently.
 */
export const UNSUPPORTED_KEYS: ReadonlyArray<{ prefix: string; instead: string }> = [
  {
    prefix: 'plugin.choria.security.request_signer.',
    instead: 'rxfleet has no remote request signer: requests are signed locally with the security provider (x509 key or the choria seed)',
  },
  {
    prefix: 'plugin.security.client_anon_tls',
    instead:
      'rxfleet does not make anonymous TLS connections from this key: TLS follows the security provider (with the choria provider and no CA, the broker is not verified)',
  },
  {
    prefix: 'plugin.choria.federation.',
    instead: 'rxfleet does not use Choria federation: it talks to the brokers it connects to directly',
  },
  {
    prefix: 'plugin.choria.federation_middleware_hosts',
    instead: 'rxfleet does not use Choria federation: it connects to plugin.choria.middleware_hosts (or SRV) only',
  },
];

/** The warning for `key` when go-choria reads it and rxfleet cannot honour it, else `undefined`. */
export function unsupportedKeyWarning(key: string): string | undefined {
  const match = UNSUPPORTED_KEYS.find((k) => key === k.prefix || (k.prefix.endsWith('.') && key.startsWith(k.prefix)));
  return match === undefined ? undefined : `go-choria reads this key; rxfleet cannot honour it: ${match.instead}`;
}

/** One middleware host, read as go-choria reads it, and what rxfleet did that upstream would not. */
export interface MiddlewareHosts {
  urls: string[];
  invalid: string[];
  /** Entries given without a port (upstream refuses them; rxfleet uses NATS's 4222). */
  withoutPort: string[];
  /** Entries that carried `user:pass@` (go-choria drops it: the login comes from plugin.nats.*). */
  withCredentials: number;
}

/**
 * Splits `plugin.choria.middleware_hosts`: comma-separated `host:port`, `nats://host:port` or
 * `tls://host:port` (an IPv6 host in brackets), with `user:pass@` before the host accepted and
 * dropped as go-choria drops it, returned as `nats://host:port` / `tls://host:port` URLs. A host
 * without a port gets NATS's 4222 (upstream refuses it; the caller warns). Entries that are not
 * host:port are returned in `invalid`, never thrown.
 */
export function parseMiddlewareHosts(value: string): MiddlewareHosts {
  const out: MiddlewareHosts = { urls: [], invalid: [], withoutPort: [], withCredentials: 0 };
  for (const raw of value.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const m = /^(?:(nats|tls):\/\/)?(?:([^@/\s]*)@)?(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9_.-]+)(?::(\d{1,5}))?$/.exec(entry);
    // user:pass@ only in a URL, as url.Parse reads it.
    const port = m?.[4] === undefined ? 4222 : Number(m[4]);
    if (m === null || (m[2] !== undefined && m[1] === undefined) || port < 1 || port > 65535) {
      out.invalid.push(entry);
      continue;
    }
    if (m[2] !== undefined) out.withCredentials++;
    if (m[4] === undefined) out.withoutPort.push(m[3]);
    out.urls.push(`${m[1] ?? 'nats'}://${m[3]}:${port}`);
  }
  return out;
}
