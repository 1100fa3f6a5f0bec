import pino from 'pino';
import type { LogFormat, LogLevel } from './logLevels';

/** The logger every library piece takes: pino's. */
export type Logger = pino.Logger;

// Defined apart so that the command line can offer them without loading pino.
export { LOG_FORMATS, LOG_LEVELS } from './logLevels';
export type { LogFormat, LogLevel } from './logLevels';

/** Where lines go (DECISIONS P6: stdout unless a file is named). */
export type LogDestination = 'stdout' | 'stderr' | 'discard' | { file: string };

/** Options for `createLogger` (`streams/logOutput.ts`). */
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
  'pin',
];
export const REDACTED_PATHS = [...SECRET_FIELDS, ...SECRET_FIELDS.map((f) => `*.${f}`), ...SECRET_FIELDS.map((f) => `*.*.${f}`)];

/**
 * A logger that writes nothing: the default for library code (a user passes their own). Given a
 * sink that drops every line, so that not even pino's default stdout destination is opened: the
 * domain does no I/O (where lines really go is `streams/logOutput.ts`'s job).
 */
export const silentLogger: Logger = pino({ level: 'silent' }, { write: () => undefined });
