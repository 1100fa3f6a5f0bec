import pino from 'pino';
import pretty from 'pino-pretty';
import { logrusLine } from './logrusFormat';
import { redactUrlCredentials } from './redact';

/** The logger every library piece takes: pino's. */
export type Logger = pino.Logger;

/** Levels accepted in configuration and on the command line. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * How lines are written: `json` (pino's JSON lines, the default), `logfmt` (the text form
 * upstream's logrus writes: `time="..." level=info msg="..." key=value`), `pretty` (for people).
 */
export const LOG_FORMATS = ['json', 'logfmt', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Where lines go (DECISIONS P6: stdout unless a file is named). */
export type LogDestination = 'stdout' | 'stderr' | 'discard' | { file: string };

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** Default `info` (DECISIONS P6). */
  level?: LogLevel;
  /** Default `pretty` when the lines go to a terminal, `json` otherwise. */
  format?: LogFormat;
  /** Default `stdout`. A file is appended to (created with its directories). */
  destination?: LogDestination;
  /** Bound into every line as `name`. */
  name?: string;
  /** @deprecated use `format: 'pretty'` (true) or `format: 'json'` (false). */
  pretty?: boolean;
  /** @deprecated use `destination: { file }`. */
  file?: string;
  /** @deprecated use `destination`. */
  stream?: 'stdout' | 'stderr';
}

// Wherever a secret could sit in an object handed to the logger, it is replaced: tokens,
// passwords and keys never reach a log line, whatever a caller passes by mistake.
const SECRET_FIELDS = [
  'token',
  'password',
  'pass',
  'passwd',
  'secret',
  'key',
  'seed',
  'privateKey',
  'private_key',
  'jwt_signing_key',
  'broker_provisioning_password',
  'brokerProvisioningPassword',
  'natsPassword',
  'nats_password',
  'cht',
  'chpwd',
  'clientKey',
  'client_key',
];
export const REDACTED_PATHS = [...SECRET_FIELDS, ...SECRET_FIELDS.map((f) => `*.${f}`), ...SECRET_FIELDS.map((f) => `*.*.${f}`)];

/** A logger that writes nothing: the default for library code (a user passes their own). */
export const silentLogger: Logger = pino({ level: 'silent' });

/** What pino writes to: a stream with `write`, and `flush` when it buffers. */
interface LineSink {
  write(line: string): unknown;
  flush?(cb?: (error?: Error) => void): void;
  flushSync?(): void;
  end?(): void;
}

/**
 * A sink that rewrites each line before it reaches `target`: URL credentials are removed from
 * every line whatever field carries them (a server list, an error message), and `transform`
 * reshapes it (logfmt). `flush` reaches the target, so a daemon's last lines are written on exit.
 */
function rewriting(target: LineSink, transform: (line: string) => string = (line) => line): LineSink {
  return {
    write: (line: string) => target.write(transform(redactUrlCredentials(line))),
    flush: (cb) => (target.flush !== undefined ? target.flush(cb) : cb?.()),
    flushSync: () => target.flushSync?.(),
    end: () => target.end?.(),
  };
}

function toLogfmt(line: string): string {
  try {
    return `${logrusLine(JSON.parse(line) as Record<string, unknown>)}\n`;
  } catch {
    return line;
  }
}

/**
 * The daemons' logger: JSON lines on stdout (or appended to a file, or stderr), `logfmt` as
 * logrus writes them, or pretty on a terminal; every field that could hold a secret is redacted,
 * and the user information of any URL in any line is removed.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const { level = 'info', name } = options;
  const destination: LogDestination =
    options.destination ?? (options.file !== undefined ? { file: options.file } : (options.stream ?? 'stdout'));
  if (destination === 'discard') return pino({ level: 'silent' });
  const fd = destination === 'stderr' ? 2 : 1;
  const terminal = typeof destination === 'string' && (destination === 'stderr' ? process.stderr : process.stdout).isTTY === true;
  const format: LogFormat =
    options.format ?? (options.pretty === true ? 'pretty' : options.pretty === false ? 'json' : terminal ? 'pretty' : 'json');
  const base = { level, name, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (format === 'pretty') {
    const target = typeof destination === 'object' ? destination.file : fd;
    return pino(
      base,
      rewriting(
        pretty({
          colorize: terminal,
          sync: true,
          ignore: 'pid,hostname',
          destination: target,
          ...(typeof destination === 'object' ? { append: true, mkdir: true } : {}),
        }),
      ),
    );
  }
  // Synchronous to a file: a line written before a crash is on disk, and the volume is modest.
  const sink =
    typeof destination === 'object'
      ? pino.destination({ dest: destination.file, append: true, sync: true, mkdir: true })
      : pino.destination({ dest: fd, sync: false });
  return pino(base, rewriting(sink, format === 'logfmt' ? toLogfmt : undefined));
}
