import { Writable } from 'node:stream';
import { Logger, silentLogger } from '../lib/logger';

/** One line per call onto a stream (stdout), surviving the stream's failure. */
export interface LineWriter {
  /** Writes `line` and a newline; `false` when the stream has failed and nothing was written. */
  write(line: string): boolean;
  /** Resolves once everything written so far has left (or the stream failed). */
  flush(): Promise<void>;
  /** Whether the stream has failed (a closed pipe: the reader went away). */
  readonly failed: boolean;
}

/**
 * Writes lines to `stream`. A stream error (EPIPE when whoever read stdout went away) is logged
 * once and ends the writing, instead of crashing the process as an unhandled `error` would; every
 * later line reports `false`, so the caller can count it.
 */
export function lineWriter(stream: Writable, logger: Logger = silentLogger): LineWriter {
  let failed = false;
  let last: Promise<void> = Promise.resolve();
  stream.on('error', (error: Error) => {
    if (failed) return;
    failed = true;
    logger.error({ err: error }, 'writing event lines failed: no more lines will be written');
  });
  return {
    write(line) {
      if (failed || stream.destroyed) return false;
      last = new Promise<void>((resolve) => stream.write(`${line}\n`, () => resolve()));
      return true;
    },
    flush: () => last,
    get failed() {
      return failed;
    },
  };
}
