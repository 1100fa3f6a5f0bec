import { existsSync, readFileSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
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
    // Loaded here: only a file without an identity asks, and the module costs every command its load.
    const { promises: dns } = await import('node:dns');
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
  /** The environment (overrides, home); default `process.env`. */
  env?: Record<string, string | undefined>;
  /** The home directory; default `os.homedir()`. */
  home?: string;
  /** Where the project `choria.conf` files are looked for, up to the root; default `process.cwd()`. */
  cwd?: string;
}

/**
 * go-choria's `plugin.d/choria.cfg` beside `file` (`config.dotdDir`), when it exists and `file` is
 * not under the home directory (upstream skips drop-ins for a user's own file). The other files in
 * `plugin.d/` only fill go-choria's raw option map, which no setting rxfleet reads comes from.
 */
export function choriaDropIns(file: string, home: string): Array<{ file: string; text: string; prefix: string }> {
  const path = resolve(file);
  if (home !== '' && path.startsWith(home)) return [];
  const dropIn = join(dirname(path), 'plugin.d', 'choria.cfg');
  try {
    return [{ file: dropIn, text: readFileSync(dropIn, 'utf8'), prefix: 'plugin.choria.' }];
  } catch {
    return [];
  }
}

/**
 * go-choria's project configuration (`config.ProjectConfigurationFiles`): every `choria.conf` in
 * `dir` and the directories above it, the root's first, so the nearest one's lines win. Read after
 * the client configuration and its drop-ins, as `config.NewConfig` reads them, for every command.
 */
export function projectConfigFiles(dir: string): Array<{ file: string; text: string; prefix: string }> {
  const found: Array<{ file: string; text: string; prefix: string }> = [];
  for (let at = resolve(dir); ; at = dirname(at)) {
    const file = join(at, 'choria.conf');
    try {
      found.unshift({ file, text: readFileSync(file, 'utf8'), prefix: '' });
    } catch {
      // Not there, or not readable (go-choria skips a file it cannot stat; one it cannot read is
      // its error, here a file nobody can read is the same as none).
    }
    if (dirname(at) === at) return found;
  }
}

/**
 * Reads and parses a Choria client configuration file. A missing or unreadable file is one error
 * problem (with the defaults returned beside it), never a throw.
 */
export async function loadChoriaClientConfig(file: string, options: LoadChoriaConfigOptions = {}): Promise<ChoriaConfigResult> {
  const env = options.env ?? process.env;
  const home = options.home ?? homedir();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : `cannot read it: ${(error as Error).message}`;
    const { config } = parseChoriaClientConfig('', { file, defaultIdentity: options.defaultIdentity ?? (await hostFqdn()) });
    return { config, problems: [{ path: file, message: reason, severity: 'error' }] };
  }
  const dropIns = [...choriaDropIns(file, home), ...projectConfigFiles(options.cwd ?? process.cwd())];
  const parse = (defaultIdentity: string): ChoriaConfigResult =>
    parseChoriaClientConfig(text, { file, defaultIdentity, home, env, dropIns });
  if (options.defaultIdentity !== undefined) return parse(options.defaultIdentity);
  // The host's name can cost a DNS round trip (a lookup and a reverse): asked only of a file that
  // names no identity (an empty identity is none, so '' here says the file had none).
  const parsed = parse('');
  return parsed.config.identity === '' ? parse(await hostFqdn()) : parsed;
}
