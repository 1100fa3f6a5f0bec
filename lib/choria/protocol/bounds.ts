import type { JsonBounds } from '../../untrustedJson';

/**
 * How much JSON structure each Choria layer can hold, so what cannot be a Choria message is refused
 * before it is built (`lib/untrustedJson.ts`).
 *
 * The envelope layers (transport, secure request and reply, request, reply) are small fixed shapes
 * whose bulk is strings: a transport nests three deep (`headers.seen-by`), a request seven at most
 * (a compound filter's statement), and none has more than a few dozen arrays and objects. The
 * bounds below are far beyond that, and far below what makes `JSON.parse` slow. The agent payload
 * (an action's inputs or outputs: facts, inventories) is the caller's own data, so it gets only the
 * depth limit of Go's `encoding/json` (10,000): whatever a go-choria server can decode, rxfleet
 * decodes.
 */
export const ENVELOPE_BOUNDS: JsonBounds = { maxDepth: 32, maxContainers: 1024 };

/** The agent payload: Go's own decoder limit, nothing tighter. */
export const AGENT_BOUNDS: JsonBounds = { maxDepth: 10_000, maxContainers: Number.POSITIVE_INFINITY };

/**
 * A lifecycle event is one flat object of short strings (an id, an identity, a component, a
 * version), two deep as a CloudEvent: under 1 KiB from a real server. Anything over 64 KiB is
 * refused unread.
 */
export const LIFECYCLE_MAX_BYTES = 64 * 1024;

/** A lifecycle event's structure, in either format. */
export const LIFECYCLE_BOUNDS: JsonBounds = { maxDepth: 8, maxContainers: 64 };
