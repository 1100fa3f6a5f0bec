import { setMaxListeners } from 'node:events';
import { Observable, SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { PauseGate, PausedError } from '@rxfleet/operators';
import { Logger, silentLogger } from '../logger';
import { FIVE_SEC_BACKOFF_MS, backoffDelay } from './backoff';
import {
  ProvisioningLockError,
  RpcAbortedError,
  RpcConnectionLostError,
  RpcPausedError,
  RpcRetryError,
  errorMessage,
  findCause,
} from './errors';
import { definedFields } from '../definedFields';

/** One finished attempt, for `rpc_time{rpc}`. */
export interface AttemptRecord {
  rpc: string;
  /** 1-based. */
  attempt: number;
  tries: number;
  /** How long the attempt took, in seconds (the scheduler's clock). */
  seconds: number;
  /** Absent when the attempt succeeded. */
  error?: unknown;
}

/** What the attempt function is given. */
export interface AttemptContext {
  /** 1-based. */
  attempt: number;
  /** Aborts when the pause gate closes or the shutdown signal fires; the attempt is also unsubscribed then. */
  signal: AbortSignal;
}

/** Options for {@link retryRpc}. */
export interface RetryRpcOptions {
  /** The label: `choria_provision#configure`, `rpcutil#inventory`. */
  rpc: string;
  /** The node asked, named in the debug lines of each try. */
  identity?: string;
  /** Attempts at most (the table of §3.2: jwt 3, gen25519 5, inventory 5, gencsr 1, configure 5, ...). */
  tries: number;
  /** Checked before the first attempt and before each one; closing it aborts an attempt or a pause at once. */
  gate?: PauseGate;
  /** Shutdown: aborts an attempt or a pause at once. */
  signal?: AbortSignal;
  /** Times the pauses and the attempts. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /** The jitter's randomness, in [0, 1). Default `Math.random`. */
  random?: () => number;
  /** The backoff table. Default {@link FIVE_SEC_BACKOFF_MS}. */
  backoffMs?: readonly number[];
  /**
   * Whether a failed attempt is worth another. Default: everything except a provisioning-lock
   * refusal (DECISIONS P10: the node belongs to another provisioner; asking again cannot help).
   */
  retryable?: (error: unknown) => boolean;
  /** Every finished attempt, successful or not (for `rpc_time{rpc}`). */
  onAttempt?: (record: AttemptRecord) => void;
  /** Once per failed call, with its final error (for `rpc_errors{rpc}`). */
  onFailed?: (error: Error) => void;
  logger?: Logger;
}

const notALockRefusal = (error: unknown): boolean =>
  findCause(error, (e): e is ProvisioningLockError => e instanceof ProvisioningLockError) === undefined;

/**
 * go-choria's `rpcWrapper` around one RPC, with DECISIONS P5: at most `tries` attempts, a jittered
 * pause from the FiveSec table between attempts (never after the last), and a final error that
 * names the action, the attempts and the last cause ({@link RpcRetryError}).
 *
 * ```
 * tries = 3, attempts fail after 10 ms, pauses p1 ≈ 750 ms, p2 ≈ 1000 ms
 * attempt 1: 10ms #
 * attempt 2:              10ms #
 * attempt 3:                           10ms #
 * result:    ---------------------------------# RpcRetryError(rpc, 3, last error)
 * ```
 *
 * Semantics:
 * - A paused gate before the first attempt or before any later one fails the call with
 *   {@link RpcPausedError} ("provisioning is paused, cannot perform <rpc>"), without attempting.
 * - Closing the gate, or the shutdown signal, during an attempt or a pause ends the call at once:
 *   the attempt is unsubscribed (its signal aborted) or the pause cancelled, and the call fails
 *   with `RpcPausedError` or {@link RpcAbortedError}. Neither is retried.
 * - An attempt that ended because the connection was lost and is back ({@link RpcConnectionLostError})
 *   is followed by the next one at once, without a pause; it still counts as one of the `tries`.
 * - An error that is not `retryable` (by default a provisioning-lock refusal) ends the call after
 *   that attempt, wrapped in `RpcRetryError` so the action and attempt count are named; find the
 *   refusal with `isProvisioningLockError`.
 * - Only a successful attempt's values are delivered, when it completes; then the call completes.
 * - `onAttempt` sees every attempt that started (with its duration); `onFailed` sees each failed
 *   call once, with the error the subscriber receives.
 * - Unsubscribing unsubscribes the attempt in flight and cancels a pending pause.
 *
 * @param attempt makes one attempt; called once per attempt, never before subscription.
 */
export function retryRpc<T>(attempt: (context: AttemptContext) => Observable<T>, options: RetryRpcOptions): Observable<T> {
  const {
    rpc,
    tries,
    gate,
    signal: shutdown,
    scheduler = asyncScheduler,
    random = Math.random,
    backoffMs = FIVE_SEC_BACKOFF_MS,
    retryable = notALockRefusal,
    onAttempt,
    onFailed,
    logger = silentLogger,
    identity,
  } = options;
  const on = identity === undefined ? '' : ` on ${identity}`;

  return new Observable<T>((subscriber) => {
    let done = false;
    let attempts = 0;
    let attemptSubscription: Subscription | undefined;
    let pause: Subscription | undefined;
    const interruptions = new Interruptions(rpc, gate, shutdown);

    const finish = (error?: Error, values?: T[]): void => {
      if (done) return;
      done = true;
      interruptions.stop();
      attemptSubscription?.unsubscribe();
      pause?.unsubscribe();
      if (error !== undefined) {
        onFailed?.(error);
        subscriber.error(error);
      } else {
        for (const value of values ?? []) subscriber.next(value);
        subscriber.complete();
      }
    };

    const start = (): void => {
      const stop = interruptions.now();
      if (stop !== undefined) return finish(stop);
      const n = ++attempts;
      logger.debug({ rpc, identity, attempt: n, tries }, `trying ${rpc}${on} ${n}/${tries}`);
      const startedAt = scheduler.now();
      const record = (error?: unknown): void =>
        onAttempt?.({ rpc, attempt: n, tries, seconds: (scheduler.now() - startedAt) / 1000, ...definedFields({ error }) });
      const values: T[] = [];
      let settled = false;
      const signal = interruptions.listen((error) => {
        settled = true;
        record(error);
        finish(error);
      });
      attemptSubscription = attemptOf(attempt, { attempt: n, signal }).subscribe({
        next: (value) => values.push(value),
        error: (error: unknown) => {
          if (settled) return;
          settled = true;
          interruptions.stop();
          record(error);
          failed(n, error);
        },
        complete: () => {
          if (settled) return;
          settled = true;
          record();
          finish(undefined, values);
        },
      });
    };

    const failed = (n: number, error: unknown): void => {
      logger.debug({ rpc, identity, attempt: n, err: error }, `${rpc}${on} attempt ${n} failed: ${errorMessage(error)}`);
      if (error instanceof PausedError || error instanceof RpcAbortedError) return finish(error);
      if (n >= tries || !retryable(error)) return finish(new RpcRetryError(rpc, n, error));
      interruptions.listen((interrupted) => finish(interrupted));
      // A reply lost with the connection is no reason to wait: the request goes again at once.
      const wait = error instanceof RpcConnectionLostError ? 0 : backoffDelay(backoffMs, n, random);
      pause = scheduler.schedule(() => {
        interruptions.stop();
        start();
      }, wait);
    };

    start();
    return () => {
      done = true;
      interruptions.stop();
      attemptSubscription?.unsubscribe();
      pause?.unsubscribe();
    };
  });
}

/** The attempt's Observable; an attempt function that throws makes one that errors with the throw. */
function attemptOf<T>(attempt: (context: AttemptContext) => Observable<T>, context: AttemptContext): Observable<T> {
  try {
    return attempt(context);
  } catch (error) {
    return new Observable<T>((s) => s.error(error));
  }
}

/**
 * What ends one call from outside: the pause gate closing, or the shutdown signal. It listens to
 * both while one attempt or one pause runs, one at a time.
 */
class Interruptions {
  // Stops listening to the gate and the shutdown signal; set while an attempt or a pause runs.
  private stopListening: (() => void) | undefined;

  constructor(
    private readonly rpc: string,
    private readonly gate: PauseGate | undefined,
    private readonly shutdown: AbortSignal | undefined,
  ) {}

  /** The error the call ends with when the shutdown signal has fired or the gate is paused now. */
  now(): Error | undefined {
    if (this.shutdown?.aborted) return new RpcAbortedError(this.rpc, this.shutdown.reason);
    if (this.gate?.paused) return new RpcPausedError(this.rpc);
    return undefined;
  }

  /**
   * Listens to the gate (a fresh signal each time: a gate's signal never un-aborts) and to the
   * shutdown signal while one attempt or one pause runs, until {@link stop}. On either,
   * `onInterrupt` settles the call first and only then is the returned signal (the attempt's own)
   * aborted, so the attempt's reaction to its signal arrives after the call has already ended with
   * the right error.
   */
  listen(onInterrupt: (error: Error) => void): AbortSignal {
    const { rpc, shutdown } = this;
    const controller = new AbortController();
    const gateSignal = this.gate?.signal();
    // One gate signal is shared by every attempt in flight: hundreds of listeners are the design, not a leak.
    if (gateSignal !== undefined) setMaxListeners(0, gateSignal);
    // Which signal fired says why: the gate aborts its signals just before it reads as paused.
    const interrupt = (error: Error): void => {
      this.stop();
      onInterrupt(error);
      controller.abort(error);
    };
    const paused = (): void => interrupt(new RpcPausedError(rpc));
    const aborted = (): void => interrupt(new RpcAbortedError(rpc, shutdown?.reason));
    gateSignal?.addEventListener('abort', paused);
    shutdown?.addEventListener('abort', aborted);
    this.stopListening = () => {
      gateSignal?.removeEventListener('abort', paused);
      shutdown?.removeEventListener('abort', aborted);
      this.stopListening = undefined;
    };
    return controller.signal;
  }

  /** Stops listening (nothing to do when not listening). */
  stop(): void {
    this.stopListening?.();
  }
}
