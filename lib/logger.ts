import pino from 'pino';
import pretty from 'pino-pretty';

/** The logger every library piece takes: pino's. */
export type Logger = pino.Logger;

/** Levels accepted in configuration and on the command line. */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';

/** Options for {@link createLogger}. */
export interface LoggerOptions {
  /** Default `info` (DECISIONS P6). */
  level?: LogLevel;
  /** Human-readable lines instead of JSON. Default: when stdout is a terminal. */
  pretty?: boolean;
  /** A file to append JSON lines to; default stdout (DECISIONS P6). */
  file?: string;
  /** Bound into every line as `name`. */
  name?: string;
  /** Where lines go when no `file` is given. Default `stdout` (DECISIONS P6); `stderr` when stdout carries data. */
  stream?: 'stdout' | 'stderr';
}

// Wherever a secret could sit in an object handed to the logger, it is replaced: tokens,
// passwords and keys never reach a log line, whatever a caller passes by mistake.
const SECRET_FIELDS = ['token', 'password', 'pass', 'passwd', 'secret', 'key', 'seed', 'privateKey', 'private_key', 'jwt_signing_key', 'broker_provisioning_password', 'brokerProvisioningPassword', 'natsPassword', 'nats_password', 'cht', 'chpwd', 'clientKey', 'client_key'];
export const REDACTED_PATHS = [...SECRET_FIELDS, ...SECRET_FIELDS.map((f) => `*.${f}`), ...SECRET_FIELDS.map((f) => `*.*.${f}`)];

/** A logger that writes nothing: the default for library code (a user passes their own). */
export const silentLogger: Logger = pino({ level: 'silent' });

/**
 * The daemon's logger: JSON lines on stdout (or appended to `file`), pretty on a terminal, with
 * every field that could hold a secret redacted.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const { level = 'info', file, name, stream = 'stdout' } = options;
  const fd = stream === 'stderr' ? 2 : 1;
  const terminal = (stream === 'stderr' ? process.stderr : process.stdout).isTTY === true;
  const usePretty = options.pretty ?? (file === undefined && terminal);
  const base = { level, name, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  // Synchronous to a file: a line written before a crash is on disk, and the volume is modest.
  if (file !== undefined) return pino(base, pino.destination({ dest: file, append: true, sync: true, mkdir: true }));
  if (usePretty) return pino(base, pretty({ colorize: terminal, sync: true, ignore: 'pid,hostname', destination: fd }));
  return pino(base, pino.destination({ dest: fd, sync: false }));
}
