import { NoRespondersError, RpcConnectionLostError, RpcTimeoutError, findCause, isProvisioningLockError } from '../../choria/errors';

/** Which step of §3.2 a cycle failed in (`claim`: active-active's claim on the node, DECISIONS P16). */
export type CycleStep =
  | 'stale'
  | 'claim'
  | 'jwt'
  | 'gen25519'
  | 'inventory'
  | 'gencsr'
  | 'helper'
  | 'defer'
  | 'shutdown'
  | 'server_jwt'
  | 'private_key'
  | 'upgrade'
  | 'configure'
  | 'restart'
  | 'aborted'
  | 'internal';

/** What a {@link CycleError} is made with beside its message. */
export interface CycleErrorOptions {
  cause?: unknown;
  /**
   * The node may hold this cycle's configuration without having restarted into it: a `configure`
   * went unanswered (it may have been applied), or the node was configured and its `restart` went
   * unanswered. Whoever provisions the node next configures it again.
   */
  nodeMayBeConfigured?: boolean;
}

/** A cycle that did not provision its node; the message is upstream's for the step. */
export class CycleError extends Error {
  override readonly name = 'CycleError';
  /** See {@link CycleErrorOptions.nodeMayBeConfigured}; false unless the step said so. */
  readonly nodeMayBeConfigured: boolean;
  constructor(
    readonly identity: string,
    readonly step: CycleStep,
    message: string,
    options?: CycleErrorOptions,
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.nodeMayBeConfigured = options?.nodeMayBeConfigured === true;
  }
}

/**
 * Whether `error` (a cycle's failure, or an attempt's) comes from a node that did not answer: an
 * attempt timed out, found nothing listening, or lost its reply with the connection. A node that
 * answered, even with a refusal, did answer.
 */
export function nodeDidNotAnswer(error: unknown): boolean {
  return (
    findCause(
      error,
      (e): e is Error => e instanceof RpcTimeoutError || e instanceof NoRespondersError || e instanceof RpcConnectionLostError,
    ) !== undefined
  );
}

/**
 * Ends a node's cycle in `step`: always throws, a {@link CycleError} with `message` and `cause`,
 * except that a provisioning-lock refusal is thrown as it is, wherever it comes from, so that the
 * cycle can end as `locked` rather than as a step's failure.
 */
export function failStep(identity: string, step: CycleStep, message: string, cause?: unknown, nodeMayBeConfigured = false): never {
  if (cause !== undefined && isProvisioningLockError(cause)) throw cause;
  throw new CycleError(identity, step, message, { cause, nodeMayBeConfigured });
}
