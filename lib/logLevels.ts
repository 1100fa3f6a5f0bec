/**
 * The log levels and formats every command accepts, apart from the logger itself: the command
 * line offers them as choices, and reading them must not load pino (a command's `--help` would
 * pay for it). `lib/logger.ts` re-exports them.
 */

/** Levels accepted in configuration and on the command line. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * How lines are written: `json` (pino's JSON lines, the default), `logfmt` (the text form
 * upstream's logrus writes: `time="..." level=info msg="..." key=value`), `logrus-json` (the JSON
 * form it writes to a `logfile`: `{"level":"info","msg":"...","time":"<RFC 3339>"}`), `pretty`
 * (for people).
 */
export const LOG_FORMATS = ['json', 'logfmt', 'logrus-json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];
