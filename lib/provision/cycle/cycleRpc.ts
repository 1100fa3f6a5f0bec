import { SchedulerLike, lastValueFrom, map, switchMap, take } from 'rxjs';
import { ActionSpec } from '../../choria/agents';
import {
  NoRespondersError,
  RpcConnectionLostError,
  RpcStatusError,
  RpcTimeoutError,
  errorMessage,
  findCause,
  isProvisioningLockError,
} from '../../choria/errors';
import { retryRpc } from '../../choria/retry';
import { Logger } from '../../logger';
import { ProvisionerRpc } from '../metrics/metrics';
import { ProvisionCycleOptions } from './cycleOptions';
import { definedFields } from '../../definedFields';

/** What {@link CycleRpc} is built from: the cycle's options, with its scheduler and logger settled. */
export type CycleRpcOptions = Pick<
  ProvisionCycleOptions,
  'client' | 'gate' | 'metrics' | 'rpcTimeoutMs' | 'backoffMs' | 'random' | 'beforeAttempt' | 'traces'
> & {
  scheduler: SchedulerLike;
  logger: Logger;
};

/** How one call treats answers that are not plain success. */
export interface CycleRpcCallOptions {
  /** A reply with a non-OK status is an answer, not a failure: rejected as {@link NonOkReply}, not retried, not an RPC error (shutdown). */
  acceptStatusErrors?: boolean;
  /** A node that stops answering after a reply to it was lost with the connection did what it was asked: rejected as {@link NodeGoneAfterLostReply} (restart). */
  lostReplyMeansGone?: boolean;
  /**
   * Told of each attempt that ended with no answer after its request may have reached the node (a
   * timeout, or the reply lost with the connection; `nothing is listening` reached nobody): the
   * node may have done what it was asked (configure).
   */
  onUnansweredDelivery?: () => void;
}

/** A node that stopped answering after a reply to it was lost with the connection (restart). */
export class NodeGoneAfterLostReply extends Error {}

/** A reply with a non-OK status where that is an answer, not a failure (shutdown). */
export class NonOkReply extends Error {
  constructor(readonly status: RpcStatusError) {
    super(status.message);
  }
}

/**
 * A cycle's RPCs, each through {@link retryRpc}: the tries of the action's table, the pause gate
 * checked before and inside every attempt, `rpc_time` observed for every attempt and `rpc_errors`
 * counted once per failed call, except for a provisioning-lock refusal (DECISIONS P10: counted on
 * its own by the cycle, never retried) and the answers {@link CycleRpcCallOptions} accepts.
 */
export class CycleRpc {
  constructor(private readonly options: CycleRpcOptions) {}

  /** One RPC through the retry wrapper; resolves with the reply data. */
  call<I extends object, O extends object>(
    spec: ActionSpec<I, O>,
    identity: string,
    input: I,
    signal: AbortSignal | undefined,
    options: CycleRpcCallOptions = {},
  ): Promise<O> {
    const { client, gate, metrics, rpcTimeoutMs, backoffMs, random } = this.options;
    const rpc = spec.rpc as ProvisionerRpc;
    // With lostReplyMeansGone (restart): once an attempt's reply was lost with the connection, a
    // node that still does not answer at the last try has done what it was asked and gone away.
    // Not sooner: right after the broker's return a node's own connection may not be back yet, and
    // a request lost on the way (not its reply) must reach the node to be done at all.
    let lostReply = false;
    const goneAfterLostReply = (error: unknown): boolean =>
      options.lostReplyMeansGone === true &&
      lostReply &&
      findCause(error, (e): e is Error => e instanceof RpcTimeoutError || e instanceof NoRespondersError) !== undefined;
    const retryable = (error: unknown): boolean =>
      !isProvisioningLockError(error) && !(options.acceptStatusErrors && error instanceof RpcStatusError);
    const send = (attemptSignal: AbortSignal) =>
      client
        .call(spec, identity, input, { signal: attemptSignal, ...definedFields({ timeoutMs: rpcTimeoutMs }) })
        .pipe(map((reply) => reply.data));
    const { beforeAttempt } = this.options;
    const call$ = retryRpc(
      ({ signal: attemptSignal }) =>
        // Active-active: nothing is sent until the bucket has confirmed the node's claim (P20); the
        // wait is inside the attempt, so the pause gate and the hard stop end it as they end an attempt.
        beforeAttempt === undefined
          ? send(attemptSignal)
          : beforeAttempt(identity).pipe(
              take(1),
              switchMap(() => send(attemptSignal)),
            ),
      {
        rpc,
        identity,
        tries: spec.tries,
        gate,
        signal,
        scheduler: this.options.scheduler,
        ...definedFields({ random, backoffMs }),
        // A status the node answered with is final for shutdown (upstream treats it as done).
        retryable,
        onAttempt: (record) => {
          if (record.error instanceof RpcConnectionLostError) lostReply = true;
          if (findCause(record.error, (e): e is Error => e instanceof RpcTimeoutError || e instanceof RpcConnectionLostError))
            options.onUnansweredDelivery?.();
          metrics?.observeRpc(rpc, record.seconds);
          this.options.traces?.attempt(identity);
        },
        onFailed: (error) => {
          // P10: a lock refusal is counted on its own, not as an RPC error.
          if (isProvisioningLockError(error) || goneAfterLostReply(error)) return;
          if (!(options.acceptStatusErrors && statusErrorOf(error) !== undefined)) metrics?.rpcError(rpc);
        },
        logger: this.options.logger,
      },
    );
    return lastValueFrom(call$).catch((error: unknown) => {
      if (goneAfterLostReply(error)) throw new NodeGoneAfterLostReply(errorMessage(error));
      const status = options.acceptStatusErrors ? statusErrorOf(error) : undefined;
      throw status === undefined ? error : new NonOkReply(status);
    });
  }
}

function statusErrorOf(error: unknown): RpcStatusError | undefined {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  if (error instanceof RpcStatusError) return error;
  return cause instanceof RpcStatusError ? cause : undefined;
}
