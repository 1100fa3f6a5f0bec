/**
 * `rxfleet enrich`'s settings from a configuration file and command-line flags: flags override the
 * file, and every problem of either (and of what they mean together) is reported, one line each,
 * naming the flag or the file and key it came from.
 */
import { existsSync, readFileSync } from 'node:fs';
import { readYamlConfig } from '../../lib/yamlConfig';
import { incusEndpoint } from '../../streams/incus/incusEndpoint';
import { EnricherConfigError, EnricherSettings, parseEnricherConfig } from '../../lib/enricher/config/config';

/** The flags, as commander hands them over: strings, unchecked, so that every problem can be reported together. */
export interface EnrichFlags {
  config?: string;
  incus?: string;
  clientCert?: string;
  clientKey?: string;
  serverCert?: string;
  serverFingerprint?: string;
  /** As the NATS options give it: URLs, comma separated or repeated. */
  nats?: string | string[];
  natsUser?: string;
  natsPassword?: string;
  natsToken?: string;
  natsCreds?: string;
  natsCa?: string;
  natsCert?: string;
  natsKey?: string;
  subjectPrefix?: string;
  stdout?: boolean;
  http?: string;
  /**
   * `--monitor`, as the shared option parses it, or none: the parser's `null` for `""` reaches
   * here as `true` (commander takes the `[host]` in `<[host]:port>` for an optional value and
   * turns a parser's null into true), which is what `--monitor ''` and `RXFLEET_MONITOR=` give.
   */
  monitor?: { host?: string; port: number } | null | '' | true;
  dataDir?: string;
  project?: string[];
  projectMarker?: string;
  instance?: string[];
  workers?: string;
  readTimeout?: string;
  ipTimeout?: string;
  readDelay?: string;
  sweepInterval?: string;
  storeInterval?: string;
  debounceWindow?: string;
  ttl?: string;
}

type FlagName = Exclude<keyof EnrichFlags, 'config' | 'project' | 'projectMarker' | 'instance' | 'stdout' | 'nats' | 'monitor'>;

// Each flag and the configuration key it sets (a dotted path in the file).
const FLAG_KEYS: ReadonlyArray<[FlagName, string]> = [
  ['incus', 'incus.url'],
  ['clientCert', 'incus.client_cert'],
  ['clientKey', 'incus.client_key'],
  ['serverCert', 'incus.server_cert'],
  ['serverFingerprint', 'incus.server_fingerprint'],
  ['natsUser', 'outputs.nats.user'],
  ['natsPassword', 'outputs.nats.password'],
  ['natsToken', 'outputs.nats.token'],
  ['natsCreds', 'outputs.nats.credentials'],
  ['natsCa', 'outputs.nats.tls.ca'],
  ['natsCert', 'outputs.nats.tls.cert'],
  ['natsKey', 'outputs.nats.tls.key'],
  ['subjectPrefix', 'outputs.nats.subject_prefix'],
  ['http', 'http'],
  ['dataDir', 'data_dir'],
  ['workers', 'workers'],
  ['readTimeout', 'read_timeout'],
  ['ipTimeout', 'ip_timeout'],
  ['readDelay', 'read_delay'],
  ['sweepInterval', 'sweep_interval'],
  ['storeInterval', 'store_interval'],
  ['debounceWindow', 'debounce_window'],
  ['ttl', 'ttl'],
];

/** `--monitor` as the `http` key writes it: `[host]:port`, or `""` for none. */
function monitorText(address: { host?: string; port: number } | null | '' | true): string {
  if (address === null || address === '' || address === true) return '';
  const host = address.host === undefined ? '' : address.host.includes(':') ? `[${address.host}]` : address.host;
  return `${host}:${address.port}`;
}

/** `subjectPrefix` → `--subject-prefix`. */
const dashed = (flag: string): string => `--${flag.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// Sets `path` in `raw`, making the mappings on the way. A non-mapping in the way (a file's
// `outputs: 5`) is left for the schema to report rather than silently replaced.
function setPath(raw: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let at = raw;
  for (const key of keys.slice(0, -1)) {
    if (at[key] === undefined) at[key] = {};
    const next = at[key];
    if (!isMapping(next)) return;
    at = next;
  }
  at[keys[keys.length - 1]] = value;
}

function readConfigFile(file: string): { raw: Record<string, unknown>; problems: string[] } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return { raw: {}, problems: [`${file}: cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`] };
  }
  return readEnricherConfigText(text, file);
}

/** Keys whose values are secrets: a problem names them and never what they hold. */
const SECRET_KEYS = new Set([
  'outputs.nats.password',
  'outputs.nats.token',
  'outputs.jetstream.password',
  'outputs.jetstream.token',
  'incus.client_key',
]);

/**
 * The text of an enricher configuration file (YAML or JSON) as the mapping it holds, or its
 * problems, each `FILE: key: message`. Never throws, and never quotes the text: yaml's own
 * messages do, and the text may hold the NATS password or the client key.
 */
export function readEnricherConfigText(text: string, file: string): { raw: Record<string, unknown>; problems: string[] } {
  const read = readYamlConfig(text, { secret: (path) => SECRET_KEYS.has(path) });
  if (read.problems.length > 0)
    return { raw: {}, problems: read.problems.map((p) => (p.path === '' ? `${file}: ${p.message}` : `${file}: ${p.path}: ${p.message}`)) };
  const parsed = read.value;
  if (parsed === null || parsed === undefined) return { raw: {}, problems: [] };
  if (!isMapping(parsed)) return { raw: {}, problems: [`${file}: expected a mapping of keys`] };
  return { raw: parsed, problems: [] };
}

/**
 * The settings `rxfleet enrich` runs with. Reads `flags.config` (YAML or JSON; absent: every
 * default), lays the flags over it, and checks the result: the configuration schema, the
 * `--project`/`--project-marker` choice, that there is an output (unless `outputRequired` is false:
 * a consumer in the same process takes the events), that the Incus endpoint can be
 * built (files readable, the key the certificate's, a pin for https), that NATS TLS files exist.
 *
 * Throws an {@link EnricherConfigError} listing every problem, each starting with the flag
 * (`--workers: expected a number >= 1, got 0`) or the file and key (`enrich.yaml: read_timeout: ...`) it came
 * from. No problem line ever contains a secret's value. Unknown keys come back as `warnings`.
 */
export function loadEnrichSettings(
  flags: EnrichFlags,
  options: { outputRequired?: boolean } = {},
): { settings: EnricherSettings; warnings: string[] } {
  const { raw, problems } = flags.config === undefined ? { raw: {}, problems: [] as string[] } : readConfigFile(flags.config);
  // Whether the file says anything about the server, before the flags are laid over it.
  const fileNamesIncus = isMapping(raw.incus) && Object.keys(raw.incus).length > 0;
  const fromFlag = new Map<string, string>();
  const set = (path: string, flag: string, value: unknown): void => {
    setPath(raw, path, value);
    fromFlag.set(path, flag);
  };
  for (const [flag, path] of FLAG_KEYS) {
    const value = flags[flag];
    if (value === undefined) continue;
    set(path, dashed(flag), flag === 'workers' && /^\d+$/.test(value) ? Number(value) : value);
  }
  if (flags.nats !== undefined) set('outputs.nats.url', '--nats', Array.isArray(flags.nats) ? flags.nats.join(',') : flags.nats);
  if (flags.monitor !== undefined) set('http', '--monitor', monitorText(flags.monitor));
  if (flags.stdout === true) set('outputs.stdout', '--stdout', true);
  if (flags.project !== undefined && flags.project.length > 0 && flags.projectMarker !== undefined) {
    problems.push('--project and --project-marker: give a list of projects or a marker, not both');
  } else if (flags.project !== undefined && flags.project.length > 0) {
    set('projects', '--project', flags.project);
  } else if (flags.projectMarker !== undefined) {
    set('projects', '--project-marker', flags.projectMarker);
  }
  if (flags.instance !== undefined && flags.instance.length > 0) set('instances', '--instance', flags.instance);

  // A problem line starts with the key's path: name the flag that set it, or the file.
  const attribute = (line: string): string => {
    const colon = line.indexOf(': ');
    const path = colon < 0 ? '' : line.slice(0, colon);
    for (const [key, flag] of fromFlag) if (path === key || path.startsWith(`${key}.`)) return `${flag}: ${line.slice(colon + 2)}`;
    return flags.config !== undefined ? `${flags.config}: ${line}` : line;
  };

  let parsed: { settings: EnricherSettings; warnings: string[] } | undefined;
  try {
    parsed = parseEnricherConfig(raw);
  } catch (error) {
    if (!(error instanceof EnricherConfigError)) throw error;
    problems.push(...error.problems.map(attribute));
  }
  // What the flags and file mean together, checked even when the schema refused something, so
  // that one run reports everything.
  const outputs = isMapping(raw.outputs) ? raw.outputs : {};
  if (options.outputRequired !== false && outputs.nats === undefined && outputs.jetstream === undefined && outputs.stdout !== true)
    problems.push(
      'no output: publish to NATS (--nats URL, outputs.nats.url), to a JetStream stream (outputs.jetstream) or write JSON lines (--stdout, outputs.stdout: true)',
    );
  const nats = parsed?.settings.outputs.nats;
  if (nats !== undefined && nats.servers.length === 0) problems.push(attribute('outputs.nats.url: required to publish to NATS'));
  for (const [output, connection] of [
    ['nats', nats],
    ['jetstream', parsed?.settings.outputs.jetstream],
  ] as const) {
    for (const [which, file] of Object.entries(connection?.tls ?? {})) {
      if (file !== undefined && !existsSync(file)) problems.push(attribute(`outputs.${output}.tls.${which}: ${file} does not exist`));
    }
  }
  const incus = raw.incus === undefined ? {} : raw.incus;
  if (isMapping(incus) && Object.values(incus).every((v) => typeof v === 'string')) {
    const text = incus as Record<string, string>;
    try {
      incusEndpoint({
        url: text.url,
        clientCert: text.client_cert,
        clientKey: text.client_key,
        serverCert: text.server_cert,
        serverFingerprint: text.server_fingerprint,
      });
    } catch (error) {
      // The endpoint names the option at fault (clientKey, serverCert...) and never a key's content;
      // here it is named as the user wrote it.
      const message = (error as Error).message.replace(/\b(clientCert|clientKey|serverCert|serverFingerprint)\b/g, (option) => {
        const key = option.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
        return `${key} (${dashed(option)})`;
      });
      problems.push(fileNamesIncus ? attribute(`incus: ${message}`) : `incus: ${message}`);
    }
  }
  if (problems.length > 0 || parsed === undefined) throw new EnricherConfigError(problems);
  return { settings: parsed.settings, warnings: parsed.warnings.map((w) => (flags.config !== undefined ? `${flags.config}: ${w}` : w)) };
}
