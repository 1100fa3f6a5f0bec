/**
 * The one option vocabulary of every `rxfleet` command: how a value is written (durations with
 * units, addresses, counts), and the option groups several commands share (logging, the NATS
 * connection, the monitor endpoint), each spelled, described and read from the environment the
 * same way wherever it appears. A command adds a group with one call; `spec/bin/help.spec.ts`
 * checks that every command's `--help` agrees with this file.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { ListenAddress, parseListenAddress, splitNatsUrls } from '../lib/addresses';
import { DurationSyntaxError, formatGoDuration, parseGoDuration } from '../lib/duration';
import { LOG_FORMATS, LOG_LEVELS, LogFormat, LogLevel } from '../lib/logLevels';
import { definedFields } from '../lib/definedFields';

/** Parses a positive whole number option, refusing anything else with one clear line. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a positive whole number, got "${value}"`);
  return n;
}

/** Parses a whole number option that may be zero. */
export function nonNegativeInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`expected a whole number >= 0, got "${value}"`);
  return n;
}

/** Parses a number between 0 and 1. */
export function fraction(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError(`expected a number from 0 to 1, got "${value}"`);
  return n;
}

/**
 * Parses a duration written as Go writes one, with its unit (`250ms`, `10s`, `1m30s`, `6h`; `0`
 * alone is zero), into milliseconds. A bare number is refused rather than guessed at: `--latency
 * 50` could mean 50 ms or 50 s, and every duration flag is written the same way.
 */
export function duration(value: string): number {
  let ms: number;
  try {
    ms = parseGoDuration(value.trim());
  } catch (error) {
    if (!(error instanceof DurationSyntaxError)) throw error;
    throw new InvalidArgumentError(`expected a duration with its unit such as 500ms, 10s or 2m, got "${value}"`);
  }
  if (ms < 0) throw new InvalidArgumentError(`expected a duration >= 0, got "${value}"`);
  return ms;
}

/**
 * A duration option: parsed by {@link duration}, its default (milliseconds) shown in the help as
 * it would be written (`1s`, not `1000`).
 */
export function durationOption(flags: string, description: string, defaultMs?: number, defaultText?: string): Option {
  const option = new Option(flags, description).argParser(duration);
  return defaultMs === undefined ? option : option.default(defaultMs, defaultText ?? formatGoDuration(defaultMs));
}

/** Parses `[host]:port`, `host:port`, `:port` or `port` (0: a free port); `""` is `null`: none. */
export function listenAddress(value: string): ListenAddress | null {
  try {
    return parseListenAddress(value) ?? null;
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** Appends comma-separated values to the list given so far (an option given twice adds to it). */
export function list(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  ];
}

/** Appends one value to the list given so far. */
export function repeated(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** The help text of a required option: commander does not mark them. */
export const REQUIRED = '(required)';

// ---------------------------------------------------------------------------------------------
// Logging: --log-level and --log-format everywhere; upstream's --debug and rxfleet's --pretty as
// the short forms the daemons have always had.

/** What the logging options give a command. */
export interface LogFlags {
  logLevel?: LogLevel;
  logFormat?: LogFormat;
  debug?: boolean;
  pretty?: boolean;
}

/** Where a command's log lines go, for the help text. */
export type LogStream = 'stdout' | 'stderr';

/**
 * Adds `--log-level`, `--log-format`, `--debug` and `--pretty`. `defaultLevel` is the command's
 * (a daemon's `info`, a tool's `warn`), named in the help; it is applied by {@link logSettings},
 * not by commander, so a configuration file's level can stand when no flag is given. Without a
 * `--log-format`, lines are pretty on a terminal and JSON otherwise.
 */
export function addLogOptions(command: Command, options: { defaultLevel: LogLevel | string; stream: LogStream | string }): Command {
  return command
    .addOption(
      new Option('--log-level <level>', `log level (default: ${options.defaultLevel}; logs go to ${options.stream})`)
        .choices(LOG_LEVELS)
        .env('RXFLEET_LOG_LEVEL'),
    )
    .addOption(
      new Option(
        '--log-format <format>',
        "json lines, logfmt (the key=value text of upstream's logrus), logrus-json (the JSON upstream writes to a log file), or pretty (default: pretty on a terminal, json otherwise; a provisioner's logfile: logrus-json)",
      )
        .choices(LOG_FORMATS)
        .env('RXFLEET_LOG_FORMAT'),
    )
    .addOption(new Option('--debug', 'log at debug level (as --log-level debug)'))
    .addOption(new Option('--pretty', 'human-readable log lines (as --log-format pretty)'));
}

/**
 * The level and format the flags ask for: `--debug` wins over `--log-level` (upstream's flag
 * always meant debug), `--pretty` over `--log-format`. `format` is undefined when nothing was
 * asked for, so a configuration file or the terminal can decide.
 */
export function logSettings(flags: LogFlags, defaultLevel: LogLevel): { level: LogLevel; format: LogFormat | undefined } {
  return {
    level: flags.debug === true ? 'debug' : (flags.logLevel ?? defaultLevel),
    format: flags.pretty === true ? 'pretty' : flags.logFormat,
  };
}

// ---------------------------------------------------------------------------------------------
// The NATS connection and its credentials. Secrets are best given in the environment, where `ps`
// does not show them.

/** What the NATS options give a command. */
export interface NatsFlags {
  /** As written (URLs, comma separated or repeated); see {@link natsServers}. */
  nats?: string[];
  natsUser?: string;
  natsPassword?: string;
  natsToken?: string;
  natsCreds?: string;
  natsCa?: string;
  natsCert?: string;
  natsKey?: string;
}

/** Which of the NATS options a command takes (the servers always). */
export interface NatsOptionSet {
  token?: boolean;
  tls?: boolean;
}

/** Adds `--nats` and the credentials options, each with its environment variable. */
export function addNatsOptions(command: Command, set: NatsOptionSet = {}): Command {
  command
    .addOption(
      new Option('--nats <urls>', 'NATS servers: nats://host:4222 or tls://host:4222, comma separated or repeated')
        .argParser(list)
        .env('RXFLEET_NATS_URL'),
    )
    .addOption(new Option('--nats-user <user>', 'NATS user').env('RXFLEET_NATS_USER'))
    .addOption(
      new Option('--nats-password <password>', 'NATS password (never logged; prefer the environment variable)').env(
        'RXFLEET_NATS_PASSWORD',
      ),
    );
  if (set.token === true)
    command.addOption(
      new Option('--nats-token <token>', 'NATS token (never logged; prefer the environment variable)').env('RXFLEET_NATS_TOKEN'),
    );
  command.addOption(new Option('--nats-creds <file>', 'NATS credentials file (a user JWT and its nkey seed)').env('RXFLEET_NATS_CREDS'));
  if (set.tls === true) {
    command
      .addOption(new Option('--nats-ca <file>', 'CA to verify the NATS server with (PEM)').env('RXFLEET_NATS_CA'))
      .addOption(new Option('--nats-cert <file>', 'client certificate for NATS (PEM)').env('RXFLEET_NATS_CERT'))
      .addOption(new Option('--nats-key <file>', 'client key for NATS (PEM; never logged)').env('RXFLEET_NATS_KEY'));
  }
  return command;
}

/**
 * The servers of `--nats`, with any `user:password@` taken out of the URLs into `user` and
 * `password` (the flags win over them), so a URL logged or shown never carries a secret.
 */
export function natsServers(flags: NatsFlags): { servers: string[]; user?: string; password?: string } {
  const { servers, credentials } = splitNatsUrls((flags.nats ?? []).join(','));
  const user = flags.natsUser ?? credentials?.user;
  const password = flags.natsPassword ?? credentials?.password;
  return { servers, ...definedFields({ user, password }) };
}

// ---------------------------------------------------------------------------------------------
// The monitor endpoint: /metrics, /health and /ready.

/** Adds `--monitor <[host]:port>`; `fallback` says what applies without it. */
export function addMonitorOption(command: Command, fallback: string): Command {
  return command.addOption(
    new Option(
      '--monitor <[host]:port>',
      `serve /metrics, /health and /ready here, such as :9153 or 127.0.0.1:9153; "" for nowhere (default: ${fallback})`,
    )
      .argParser(listenAddress)
      .env('RXFLEET_MONITOR'),
  );
}

// ---------------------------------------------------------------------------------------------
// The Incus or LXD server the enricher reads (`enrich`, `provision-incus`).

/** What the Incus server options give a command. */
export interface IncusFlags {
  incus?: string;
  clientCert?: string;
  clientKey?: string;
  serverCert?: string;
  serverFingerprint?: string;
}

/** Adds `--incus` and the https client's certificate, key and server pin. */
export function addIncusOptions(command: Command): Command {
  return command
    .option('--incus <url>', 'the server: a unix socket path, or https://host[:port] (default: the local socket)')
    .option('--client-cert <file>', 'https: the client certificate the server trusts (PEM)')
    .option('--client-key <file>', 'https: its private key (PEM; never logged)')
    .option('--server-cert <file>', 'https: the server certificate to pin (PEM)')
    .option('--server-fingerprint <sha256>', 'https: the SHA-256 fingerprint of the server certificate to pin');
}
