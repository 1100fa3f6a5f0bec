import { checkCount } from './internal/checks.js';

/** The longest line a {@link LineSplitter} or `splitLines` accepts unless told otherwise: 1 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 1024 * 1024;

/**
 * What {@link LineSplitter.push} found in a chunk.
 *
 * @group What the operators take and give
 */
export interface ChunkLines {
  /** Complete lines, without their `\n` (nor a `\r` before it), in order. */
  readonly lines: string[];
  /** A line grew past the limit before its end: the stream cannot be read further. */
  readonly oversize: boolean;
}

/**
 * Cuts a stream of chunks into lines of at most `maxBytes` bytes of UTF-8, chunk by chunk, without
 * copying a chunk more than once: the core of `splitLines`, public for a caller whose chunks come
 * from an event handler rather than an Observable (a child process's stdout, say).
 *
 * Guarantees:
 * - A line is everything up to a `\n`, whichever chunks it spans; a `\r` just before the `\n` is
 *   dropped, so CRLF and LF streams read the same. A multi-byte character split across chunks
 *   comes out whole (lines are decoded only once complete, and `\n` never occurs inside one).
 * - `Uint8Array` chunks are bytes as they came; a string chunk is taken as its UTF-8 encoding, so
 *   the limit is always in bytes.
 * - Once a line is longer than `maxBytes` (whole or still growing), `push` reports `oversize` and
 *   from then on returns no more lines: whoever reads the stream should stop trusting it. The
 *   lines before the long one in that chunk are still returned.
 * - `end()` returns what is left after the last `\n` (the stream's last line, if it had no
 *   newline), or `undefined` when nothing is.
 * - It calls nothing of yours and throws nothing.
 *
 * Not thread-safe by design: one owner pushes.
 *
 * @example Lines from a child process's data events, the process killed past the limit
 * ```ts
 * const splitter = new LineSplitter(64 * 1024);
 * child.stdout.on('data', (chunk: Uint8Array) => {
 *   const { lines, oversize } = splitter.push(chunk);
 *   if (oversize) child.kill();
 *   else lines.forEach((line) => handle(JSON.parse(line)));
 * });
 * child.stdout.on('end', () => {
 *   const last = splitter.end();
 *   if (last !== undefined) handle(JSON.parse(last));
 * });
 * ```
 *
 * @group Cores
 */
export class LineSplitter {
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private broken = false;
  private readonly decoder = new TextDecoder();
  private encoder: { encode(text: string): Uint8Array } | undefined;

  /** @throws RangeError if `maxBytes` is not a whole number of at least 1 (nor `Infinity`). */
  constructor(
    /** The longest line accepted, in bytes of UTF-8: a whole number, at least 1 (`Infinity`: no limit). */
    readonly maxBytes: number = DEFAULT_MAX_LINE_BYTES,
  ) {
    checkCount('LineSplitter', 'maxBytes', maxBytes, 1);
  }

  /** The lines a chunk completes. */
  push(chunk: Uint8Array | string): ChunkLines {
    if (this.broken) return { lines: [], oversize: true };
    const bytes = typeof chunk === 'string' ? (this.encoder ??= new TextEncoder()).encode(chunk) : chunk;
    const lines: string[] = [];
    let start = 0;
    for (let end = bytes.indexOf(0x0a); end !== -1; end = bytes.indexOf(0x0a, start)) {
      if (this.pendingBytes + (end - start) > this.maxBytes) return this.overflow(lines);
      lines.push(this.line(bytes.subarray(start, end)));
      start = end + 1;
    }
    if (start < bytes.length) {
      this.pendingBytes += bytes.length - start;
      if (this.pendingBytes > this.maxBytes) return this.overflow(lines);
      this.pending.push(bytes.subarray(start));
    }
    return { lines, oversize: false };
  }

  /** What is left after the last newline, as a line (`undefined` if nothing); the splitter starts afresh. */
  end(): string | undefined {
    if (this.broken || this.pendingBytes === 0) {
      this.pending = [];
      this.pendingBytes = 0;
      return undefined;
    }
    return this.line(new Uint8Array(0));
  }

  private overflow(lines: string[]): ChunkLines {
    this.broken = true;
    this.pending = [];
    this.pendingBytes = 0;
    return { lines, oversize: true };
  }

  private line(tail: Uint8Array): string {
    let bytes = tail;
    if (this.pending.length > 0) {
      bytes = new Uint8Array(this.pendingBytes + tail.length);
      let at = 0;
      for (const part of this.pending) {
        bytes.set(part, at);
        at += part.length;
      }
      bytes.set(tail, at);
      this.pending = [];
      this.pendingBytes = 0;
    }
    const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
    return this.decoder.decode(bytes.subarray(0, end));
  }
}
