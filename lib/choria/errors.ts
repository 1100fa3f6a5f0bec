import { PausedError } from '@rxfleet/operators';
import { formatGoDuration } from '../duration';

/**
 * The typed failures of the Choria wire layer, one class per failure, each keeping what a caller
 * needs to decide (a status code, an attempt count) and the underlying error as `cause`.
 * Messages never carry a secret: a token or key is never part of a request's description.
 */

// Defined beside the protocol that refuses messages (protocol/ imports nothing above it); one
// place to import every Choria error from.
export { ProtocolError } from './protocol/protocolError';
export type { ProtocolErrorReason } from './protocol/protocolError';

/** The status codes of a Choria RPC reply (mcorpc). */
export const StatusCode = {
  OK: 0,
  Aborted: 1,
  UnknownAction: 2,
  MissingData: 3,
  InvalidData: 4,
  UnknownError: 5,
} as const;
export type StatusCode = (typeof StatusCode)[keyof typeof StatusCode];

/** The refusal a node sends while another provisioner holds its provisioning lock (go-choria #2110). */
export const PROVISIONING_LOCK_MESSAGE = 'Could not obtain provisioning lock';

/** A node answered with a non-zero status code. The message is Go's: `invalid response from <sender>: <statusmsg> (<code>)`. */
export class RpcStatusError extends Error {
  override readonly name: string = 'RpcStatusError';
  constructor(
    /** `choria_provision#configure` style label. */
    readonly rpc: string,
    readonly sender: string,
    readonly statuscode: number,
    readonly statusmsg: string,
  ) {
    super(`invalid response from ${sender}: ${statusmsg} (${statuscode})`);
  }
}

/**
 * DECISIONS P10: the node is being provisioned by someone else (another provisioner, or this one
 * under another caller id). Not retried, not a provisioning error; counted on its own.
 */
export class ProvisioningLockError extends RpcStatusError {
  override readonly name = 'ProvisioningLockError';
}

/**
 * No reply within the attempt's timeout (discovery timeout + the agent's DDL timeout). `refused`
 * counts the replies that arrived on the attempt's subject and were skipped (DECISIONS P18: they
 * did not decode, did not match, or came from another node), named in the message when any did.
 */
export class RpcTimeoutError extends Error {
  override readonly name = 'RpcTimeoutError';
  constructor(
    readonly rpc: string,
    readonly identity: string,
    readonly timeoutMs: number,
    readonly refused = 0,
  ) {
    super(
      `${rpc}: no reply from ${identity} within ${formatGoDuration(timeoutMs)}${refused > 0 ? ` (${refused} malformed or foreign repl${refused === 1 ? 'y' : 'ies'} skipped)` : ''}`,
    );
  }
}

/**
 * The connection to the broker was lost while the attempt waited for its reply, and is back. Core
 * NATS keeps nothing for a subscriber that is away, and nats.js drops what it buffered while
 * reconnecting, so the request or its reply is gone: the attempt ends now rather than waiting out
 * its timeout, and the retry wrapper sends it again at once (within its tries).
 */
export class RpcConnectionLostError extends Error {
  override readonly name = 'RpcConnectionLostError';
  constructor(
    readonly rpc: string,
    readonly identity: string,
  ) {
    super(`${rpc}: the connection to the broker was lost while waiting for the reply from ${identity}`);
  }
}

/** NATS said at once that nothing subscribes to the node's subject: the node is not connected. */
export class NoRespondersError extends Error {
  override readonly name = 'NoRespondersError';
  constructor(
    readonly rpc: string,
    readonly identity: string,
  ) {
    super(`${rpc}: nothing is listening for ${identity}`);
  }
}

/** The reply to this request arrived but is not a valid reply (bad envelope, hash, or agent data). */
export class MalformedReplyError extends Error {
  override readonly name = 'MalformedReplyError';
  constructor(
    readonly rpc: string,
    readonly identity: string,
    cause: unknown,
  ) {
    super(`${rpc}: malformed reply from ${identity}: ${errorMessage(cause)}`, { cause });
  }
}

/** The request was cancelled by an `AbortSignal` (shutdown), not by a pause. */
export class RpcAbortedError extends Error {
  override readonly name = 'RpcAbortedError';
  constructor(
    readonly rpc: string,
    cause?: unknown,
  ) {
    super(`${rpc} was aborted${cause === undefined ? '' : `: ${errorMessage(cause)}`}`, { cause });
  }
}

/** The pause gate closed before or during the call (Go: "provisioning is paused, cannot perform <action>"). */
export class RpcPausedError extends PausedError {
  override readonly name = 'RpcPausedError';
  constructor(readonly rpc: string) {
    super(`provisioning is paused, cannot perform ${rpc}`);
  }
}

/**
 * DECISIONS P5: the retry wrapper's final error. It names the action, the number of attempts made,
 * and the last attempt's error (also `cause`).
 */
export class RpcRetryError extends Error {
  override readonly name = 'RpcRetryError';
  constructor(
    readonly rpc: string,
    readonly attempts: number,
    cause: unknown,
  ) {
    super(`${rpc} failed after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${errorMessage(cause)}`, { cause });
  }
}

// Defined beside its rule, so the command line checks a component without loading these errors.
export { InvalidLifecycleComponentError } from './lifecycleComponent';

/** Whether `error`, or any error in its `cause` chain, is a provisioning-lock refusal (DECISIONS P10). */
export function isProvisioningLockError(error: unknown): boolean {
  return findCause(error, (e): e is ProvisioningLockError => e instanceof ProvisioningLockError) !== undefined;
}

/** The first error in `error`'s cause chain (itself included) that passes `test`. */
export function findCause<T>(error: unknown, test: (e: unknown) => e is T): T | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 16 && current !== undefined && current !== null; depth++) {
    if (test(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** One line for an unknown thrown value. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
