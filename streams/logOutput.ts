import pino from 'pino';
import pretty from 'pino-pretty';
import { LogDestination, LogFormat, Logger, LoggerOptions, REDACTED_PATHS } from '../lib/logger';
import { logrusJsonLine, logrusLine } from '../lib/logrusFormat';
import { redactUrlCredentials } from '../lib/redact';

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

/** A pino line reshaped by `format` (logrus's text or JSON); a line that does not parse goes as it is. */
function reshaped(format: (record: Record<string, unknown>) => string): (line: string) => string {
  return (line) => {
    try {
      return `${format(JSON.parse(line) as Record<string, unknown>)}\n`;
    } catch {
      return line;
    }
  };
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
      : // minLength 1 writes every line at once, as 0 would, and makes flush() wait for the write
        // in progress: with 0, sonic-boom's flush calls back at once, before its last lines are out.
        pino.destination({ dest: fd, sync: false, minLength: 1 });
  const transform =
    format === 'logfmt' ? reshaped((r) => logrusLine(r)) : format === 'logrus-json' ? reshaped((r) => logrusJsonLine(r)) : undefined;
  return pino(base, rewriting(sink, transform));
}
