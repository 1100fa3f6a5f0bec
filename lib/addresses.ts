/**
 * Addresses the commands and configuration files are given: a listen address for the monitor
 * endpoint, and NATS server lists that may carry credentials in their URLs.
 */

/** A listen address: `host` absent means every interface. */
export interface ListenAddress {
  host?: string;
  port: number;
}

/**
 * A listen address as `[host]:port`, `host:port`, `:port` or `port` (0 picks a free port), or
 * `undefined` for `""` (serve nothing). Throws a one-line `Error` for anything else.
 */
export function parseListenAddress(text: string): ListenAddress | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  const match = /^(?:\[([^\]]+)\]|([^:\s]*)):?(\d+)$/.exec(trimmed.includes(':') ? trimmed : `:${trimmed}`);
  const port = match === null ? NaN : Number(match[3]);
  if (match === null || !Number.isInteger(port) || port > 65535)
    throw new Error(`expected [host]:port such as :9153 or 127.0.0.1:9153 ("" for none), got "${text}"`);
  const host = match[1] ?? match[2];
  return host === undefined || host === '' ? { port } : { host, port };
}

/**
 * NATS server URLs from a comma-separated list, with any `user:password@` taken out of the URLs
 * (into `credentials`) so that what is logged about a server never carries a secret.
 */
export function splitNatsUrls(text: string): { servers: string[]; credentials?: { user?: string; password?: string } } {
  let credentials: { user?: string; password?: string } | undefined;
  const servers = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((server) => {
      const at = server.lastIndexOf('@');
      if (at < 0) return server;
      const scheme = /^[a-z]+:\/\//i.exec(server)?.[0] ?? '';
      const userinfo = server.slice(scheme.length, at);
      const colon = userinfo.indexOf(':');
      const user = decodeURIComponent(colon < 0 ? userinfo : userinfo.slice(0, colon));
      credentials = colon < 0 ? { user } : { user, password: decodeURIComponent(userinfo.slice(colon + 1)) };
      return `${scheme}${server.slice(at + 1)}`;
    });
  return credentials === undefined ? { servers } : { servers, credentials };
}
