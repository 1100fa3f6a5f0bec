import { Observable, OperatorFunction } from 'rxjs';
import { LineTooLongError } from './errors.js';
import { checkCount } from './internal/checks.js';
import { subscribeWith } from './internal/OperatorSubscriber.js';
import { DEFAULT_MAX_LINE_BYTES, LineSplitter } from './LineSplitter.js';
import { RingQueue } from './RingQueue.js';

/**
 * Options for {@link splitLines}.
 *
 * @group Options
 */
export interface SplitLinesConfig {
  /** The longest line accepted, in bytes of UTF-8: a whole number, at least 1 (`Infinity`: no limit). Default 1 MiB. */
  maxBytes?: number;
}

/**
 * Cuts a stream of chunks (`Uint8Array` bytes or strings) into its lines.
 *
 * <span class="informal">What `readline` does for a Node stream, for any Observable of chunks, with
 * a limit: a line protocol over a pipe or a socket (a helper process's answers, NDJSON) arrives in
 * chunks that know nothing of lines.</span>
 *
 * ```
 * a = 'x\ny', b = 'z\r\n\nw'
 * source: -a--b------|
 * result: -x--(YE)---(W|)      Y = 'yz', E = '' (an empty line), W = 'w'
 * ```
 * (`x` is complete in the first chunk; `y` waits for the rest of its line; the CR before a newline
 * is dropped; the last line, unterminated, goes out when the source completes)
 *
 * Exactly:
 * - Each line is emitted once its `\n` has arrived, in order, without the `\n` or a `\r` just
 *   before it; a multi-byte character split across chunks comes out whole.
 * - When the source completes, what follows the last `\n` (if anything) is emitted as the last
 *   line, then the output completes.
 * - A line longer than `maxBytes` bytes errors the output with a {@link LineTooLongError} (the
 *   lines before it are emitted first) and unsubscribes the source: a stream that sends one is not
 *   to be trusted further, and holding the line would cost unbounded memory.
 * - When the source errors, the output errors at once; a partial line is dropped.
 * - Nothing of the user's is called: there is no callback to throw.
 * - A consumer that feeds the source synchronously from an emission cannot get a later chunk's
 *   lines ahead of the rest of an earlier chunk's: lines are handed on by one loop, in order.
 * - Unsubscribing unsubscribes the source.
 * - A `maxBytes` that is not a whole number of at least 1 (nor `Infinity`) is refused when the
 *   operator is made, with a `RangeError`.
 *
 * @example Read a child process's NDJSON answers, refusing a line past 64 KiB
 * ```ts
 * chunks$.pipe(splitLines({ maxBytes: 64 * 1024 }), map((line) => JSON.parse(line))).subscribe(handle);
 * ```
 *
 * @param config `maxBytes`.
 * @return A function that returns an Observable of the lines.
 * @throws RangeError (when called) if `maxBytes` is not a whole number of at least 1 (nor `Infinity`).
 *
 * @group Operators
 */
export function splitLines(config: SplitLinesConfig = {}): OperatorFunction<Uint8Array | string, string> {
  const { maxBytes = DEFAULT_MAX_LINE_BYTES } = config;
  checkCount('splitLines', 'maxBytes', maxBytes, 1);
  return (source) =>
    new Observable<string>((subscriber) => {
      const splitter = new LineSplitter(maxBytes);
      const lines = new RingQueue<string>();
      let emitting = false;
      let tooLong = false;
      let ended = false;
      // A chunk fed from inside an emission only queues its lines: the loop already running hands
      // them on after the ones it holds.
      const handOn = (): void => {
        if (emitting) return;
        emitting = true;
        try {
          while (lines.length > 0 && !subscriber.closed) subscriber.next(lines.shift() as string);
        } finally {
          emitting = false;
        }
        if (tooLong) subscriber.error(new LineTooLongError(maxBytes));
        else if (ended) subscriber.complete();
      };
      subscribeWith(subscriber, source, {
        next: (chunk) => {
          if (tooLong || ended) return;
          const found = splitter.push(chunk);
          for (const line of found.lines) lines.push(line);
          tooLong = found.oversize;
          handOn();
        },
        complete: () => {
          ended = true;
          const last = splitter.end();
          if (last !== undefined) lines.push(last);
          handOn();
        },
      });
    });
}
