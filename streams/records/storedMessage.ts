/** One message read from a stream: its subject, sequence, when the stream stored it, its body. */
export interface StoredMessage {
  readonly subject: string;
  readonly seq: number;
  /** Wall clock, ms. */
  readonly time: number;
  readonly text: string;
  /** `KV-Operation` of a KV bucket's message: `DEL` or `PURGE` for a deleted key. */
  readonly operation?: string;
}

/** The stream is not there (`stream not found`): nothing to read, which a reader reports as such. */
export class StreamMissingError extends Error {
  override readonly name = 'StreamMissingError';
  constructor(readonly stream: string) {
    super(`stream ${stream} not found`);
  }
}
