import { isProvisioningLockError } from '../choria/errors';

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

/** A cycle that did not provision its node; the message is upstream's for the step. */
export class CycleError extends Error {
  override readonly name = 'CycleError';
  constructor(
    readonly identity: string,
    readonly step: CycleStep,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * Ends a node's cycle in `step`: always throws, a {@link CycleError} with `message` and `cause`,
 * except that a provisioning-lock refusal is thrown as it is, wherever it comes from, so that the
 * cycle can end as `locked` rather than as a step's failure.
 */
export function failStep(identity: string, step: CycleStep, message: string, cause?: unknown): never {
  if (cause !== undefined && isProvisioningLockError(cause)) throw cause;
  throw new CycleError(identity, step, message, cause === undefined ? undefined : { cause });
}
