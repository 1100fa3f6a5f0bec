/** Why an inbound message was refused. Bounded, so it can label a metric. */
export type ProtocolErrorReason = 'oversized' | 'not_json' | 'protocol' | 'schema' | 'base64' | 'hash' | 'stale' | 'payload';

/** An inbound message that is not a valid Choria message (any layer). Never thrown into a pipeline: it is counted and logged. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
  constructor(
    readonly reason: ProtocolErrorReason,
    /** Which layer refused it: `transport`, `secure_request`, `request`, `secure_reply`, `reply`, `agent`, `lifecycle`. */
    readonly layer: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    // A refusal is data about a message, counted and logged by its reason, never a bug to trace:
    // without a stack one costs a sixth as much, and a hostile flood makes one per junk message.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(`${layer}: ${message}`, options);
    Error.stackTraceLimit = limit;
  }
}
