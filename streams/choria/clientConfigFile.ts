import { existsSync, readFileSync } from 'node:fs';
import { promises as dns } from 'node:dns';
import { homedir, hostname } from 'node:os';
import { join } from 'node:path';
import { ChoriaConfigResult, parseChoriaClientConfig } from '../../lib/choria/clientConfig';

/** Options for {@link defaultChoriaConfigPath}: where home is and how to test a file, for tests. */
export interface DefaultChoriaConfigPathOptions {
  home?: string;
  exists?: (path: string) => boolean;
}

/**
 * go-choria's `UserConfig()`: the first of `~/.choriarc`, `~/.mcollective`,
 * `/etc/choria/client.conf`, `/usr/local/etc/choria/client.conf` that exists, else
 * `/etc/puppetlabs/mcollective/client.cfg` (returned even when it does not exist, as upstream).
 */
export function defaultChoriaConfigPath(options: DefaultChoriaConfigPathOptions = {}): string {
  const { home = homedir(), exists = existsSync } = options;
  const candidates = [
    ...(home === '' ? [] : [join(home, '.choriarc'), join(home, '.mcollective')]),
    '/etc/choria/client.conf',
    '/usr/local/etc/choria/client.conf',
  ];
  return candidates.find((path) => exists(path)) ?? '/etc/puppetlabs/mcollective/client.cfg';
}

/**
 * The host's fully qualified name: `os.hostname()` when it already has a dot, otherwise the
 * canonical name DNS gives for it, otherwise the bare hostname. Never rejects.
 */
export async function hostFqdn(): Promise<string> {
  const name = hostname();
  if (name.includes('.')) return name;
  try {
    const { address } = await dns.lookup(name);
    const names = await dns.reverse(address);
    return names.find((n) => n.startsWith(`${name}.`)) ?? names.find((n) => n.includes('.')) ?? name;
  } catch {
    return name;
  }
}

/** Options for {@link loadChoriaClientConfig}. */
export interface LoadChoriaConfigOptions {
  /** Used when the file sets no `identity`; default {@link hostFqdn}. */
  defaultIdentity?: string;
}

/**
 * Reads and parses a Choria client configuration file. A missing or unreadable file is one error
 * problem (with the defaults returned beside it), never a throw.
 */
export async function loadChoriaClientConfig(file: string, options: LoadChoriaConfigOptions = {}): Promise<ChoriaConfigResult> {
  const defaultIdentity = options.defaultIdentity ?? (await hostFqdn());
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : `cannot read it: ${(error as Error).message}`;
    const { config } = parseChoriaClientConfig('', { file, defaultIdentity });
    return { config, problems: [{ path: file, message: reason, severity: 'error' }] };
  }
  return parseChoriaClientConfig(text, { file, defaultIdentity, home: homedir() });
}
