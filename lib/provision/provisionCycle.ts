import { Observable, SchedulerLike, asyncScheduler, lastValueFrom, map } from 'rxjs';
import { PauseGate } from '@rxfleet/operators';
import { fromAbortable } from '@rxfleet/operators';
import { ActionSpec, Gen25519Output, InventoryOutput, JwtOutput, PROVISION_RPCS } from '../choria/agents';
import { NoRespondersError, RpcConnectionLostError, RpcStatusError, RpcTimeoutError, errorMessage, findCause, isProvisioningLockError } from '../choria/errors';
import { encryptPrivateKey } from '../choria/keyTransport';
import { retryRpc } from '../choria/retry';
import { Logger, silentLogger } from '../logger';
import { CertDenyList } from './certDenyList';
import { ProvisionerConfig } from './config';
import { CsrReply, validateCsr } from './csrValidation';
import { Ed25519Reply, newGen25519Nonce, validateGen25519Reply } from './gen25519Reply';
import { HelperInput, buildHelperInput } from './helperInput';
import { HelperResponse } from './helperResponse';
import { ProvisionerRpc } from './metrics';
import { CycleOutcome, CycleResult, HostTicket } from './pipeline';
import { ProvisioningClaims, validateProvisioningJwt } from './provisioningJwt';
import { signServerJwt } from './serverJwt';
import { SiteFiles } from '../siteFiles';
import { staleSightingError } from './staleSighting';
import { decideUpgrade, releaseUpdateError, upgradeFailed } from './upgradeDecision';

/** One attempt of one RPC, as {@link ChoriaRpcClient.call} makes it. */
export interface CycleRpcClient {
  call<I extends object, O>(spec: ActionSpec<I, O>, identity: string, input: I, options?: { signal?: AbortSignal; timeoutMs?: number }): Observable<{ data: O; statuscode: number; statusmsg: string }>;
}

/** The helper, as {@link HelperRunner} runs it (it counts `helper_time` and `helper_errors` itself). */
export interface CycleHelper {
  run(input: HelperInput, signal?: AbortSignal): Promise<HelperResponse>;
}

/** Where a cycle's RPCs and outcomes are counted: {@link ProvisionerMetrics} fits. */
export interface CycleMetrics {
  observeRpc(rpc: ProvisionerRpc, seconds: number): void;
  rpcError(rpc: ProvisionerRpc): void;
  helperShutdownRequest(): void;
  lockRefused(): void;
}

/** The settings a cycle reads; a {@link ProvisionerConfig} fits. */
export type CycleSettings = Pick<
  ProvisionerConfig,
  'token' | 'intervalMs' | 'features' | 'jwtVerifyCert' | 'jwtSigningKey' | 'jwtSigningToken' | 'serverJwtValidityMs' | 'certDenyList' | 'upgradesRepository' | 'upgradesOptional'
>;

/** Options for {@link ProvisionCycle}. */
export interface ProvisionCycleOptions {
  config: CycleSettings;
  client: CycleRpcClient;
  helper: CycleHelper;
  /** Where `jwt_verify_cert`, `jwt_signing_key` and `jwt_signing_token` are read from, on every cycle. */
  files: SiteFiles;
  /** Read before and inside every RPC attempt (and by the helper runner, which holds the same gate). */
  gate?: PauseGate;
  metrics?: CycleMetrics;
  /** Per attempt; default the client's (discovery timeout + the agent's DDL timeout). */
  rpcTimeoutMs?: number;
  /** The retry pauses' table; default go-choria's FiveSec. */
  backoffMs?: readonly number[];
  random?: () => number;
  /** Times the retry pauses. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /** The clock admission timed sightings by (stale check), ms. Default `scheduler.now()`. */
  clock?: () => number;
  /** The wall clock JWTs are checked and signed with, ms. Default `Date.now`. */
  wallClock?: () => number;
  logger?: Logger;
}

/** Which step of §3.2 a cycle failed in (`claim`: active-active's claim on the node, DECISIONS P16). */
export type CycleStep = 'stale' | 'claim' | 'jwt' | 'gen25519' | 'inventory' | 'gencsr' | 'helper' | 'defer' | 'shutdown' | 'server_jwt' | 'private_key' | 'upgrade' | 'configure' | 'restart' | 'aborted' | 'internal';

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

/** What a cycle is given about its node. */
export interface CycleSighting {
  identity: string;
  /** When admission timed the sighting, on the `clock` of the cycle. */
  sightedAt: number;
}

/**
 * One node's provisioning cycle (choria-provisioner.md §3.2 to §3.11), step by step and in order:
 * the stale-sighting refusal; `jwt` and its verification (features.jwt); `gen25519` and the nonce
 * signature (features.ed25519); `rpcutil#inventory`; `gencsr` and the CSR checks (features.pki);
 * the helper, its `defer` and `shutdown`; the server JWT (features.ed25519); the private key
 * encrypted for the node (when the helper returned one); the upgrade (features.upgrades);
 * `configure` with every field always sent; `restart` with splay 1.
 *
 * Guarantees:
 * - Each RPC goes through {@link retryRpc} with the tries of the table, the pause gate checked before
 *   and inside every attempt, `rpc_time` observed for every attempt and `rpc_errors` counted once
 *   per failed call.
 * - A provisioning-lock refusal (DECISIONS P10) ends the cycle at once as `locked`: not retried,
 *   not an RPC or provision error, counted by `lockRefused`. The caller holds the node's key for the
 *   lock's lifetime (the pipeline's `lockHoldMs`), since another provisioner is working on it.
 * - Bad input from the node (a malformed reply, a CSR that does not parse or names another host, a
 *   key of the wrong length, a JWT that does not verify) fails this node with a clear
 *   {@link CycleError}; nothing is thrown past it (DECISIONS P12).
 * - Outcomes: `provisioned` after configure and restart; `shutdown` when the helper asked for it
 *   and the node acknowledged; `upgraded` after a successful `release_update`; `locked`; anything
 *   else rejects with a `CycleError` naming the step.
 */
export class ProvisionCycle {
  private readonly denyList: CertDenyList;
  private readonly logger: Logger;
  private readonly scheduler: SchedulerLike;
  private readonly clock: () => number;
  private readonly wallClock: () => number;

  constructor(private readonly options: ProvisionCycleOptions) {
    this.denyList = new CertDenyList(options.config.certDenyList);
    this.logger = options.logger ?? silentLogger;
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.clock = options.clock ?? (() => this.scheduler.now());
    this.wallClock = options.wallClock ?? Date.now;
  }

  /**
   * The cycle for an admitted ticket, as the worker pool wants it: its outcome (an error is a failed
   * outcome, made by the pool). `hardStop` aborts it at once; so does unsubscribing.
   */
  outcome(ticket: HostTicket, hardStop?: AbortSignal): Observable<CycleOutcome> {
    return fromAbortable((signal) => this.run({ identity: ticket.key, sightedAt: ticket.admittedAt }, signal), hardStop === undefined ? {} : { signal: hardStop }).pipe(
      map((value): CycleOutcome => ({ status: 'done', value })),
    );
  }

  /**
   * Runs the cycle for one node. `signal` is the hard stop (the end of the shutdown grace period):
   * it aborts an RPC attempt, a retry pause or the helper at once.
   */
  async run(sighting: CycleSighting, signal?: AbortSignal): Promise<CycleResult> {
    const { identity } = sighting;
    try {
      return await this.steps(sighting, signal);
    } catch (error) {
      if (isProvisioningLockError(error)) {
        this.options.metrics?.lockRefused();
        this.logger.warn({ identity }, `${identity} is being provisioned by another provisioner (its provisioning lock is held): leaving it`);
        return 'locked';
      }
      if (error instanceof CycleError) throw error;
      // Every step wraps its own failures; anything else is a bug, still confined to this node.
      throw new CycleError(identity, signal?.aborted ? 'aborted' : 'internal', errorMessage(error), { cause: error });
    }
  }

  private async steps(sighting: CycleSighting, signal: AbortSignal | undefined): Promise<CycleResult> {
    const { config } = this.options;
    const { identity } = sighting;
    const fail = (step: CycleStep, message: string, cause?: unknown): never => {
      // A lock refusal is recognised wherever it comes from, never wrapped into a step's failure.
      if (cause !== undefined && isProvisioningLockError(cause)) throw cause;
      throw new CycleError(identity, step, message, cause === undefined ? undefined : { cause });
    };

    // 1. A sighting that waited too long is refused; the node comes back fresh (#167).
    const stale = staleSightingError(sighting.sightedAt, this.clock(), config.intervalMs);
    if (stale !== undefined) fail('stale', stale);

    // 2. The provisioning JWT, and the server's ECDH key that comes with it.
    let claims: ProvisioningClaims | null = null;
    let serverEcdhPublic = '';
    if (config.features.jwt) {
      let reply: JwtOutput;
      try {
        reply = await this.rpc(PROVISION_RPCS.jwt, identity, { token: config.token }, signal);
      } catch (error) {
        return fail('jwt', `could not fetch and validate JWT: ${identity}: ${errorMessage(error)}`, error);
      }
      try {
        claims = await validateProvisioningJwt(reply.jwt, config.jwtVerifyCert, this.options.files, { now: this.wallClock });
      } catch (error) {
        return fail('jwt', `could not validate JWT: ${identity}: ${errorMessage(error)}`, error);
      }
      serverEcdhPublic = reply.ecdh_public;
    }

    // 3. The node's new ed25519 key, proven by its signature of a nonce.
    let ed25519: Ed25519Reply | null = null;
    if (config.features.ed25519) {
      const nonce = newGen25519Nonce();
      try {
        const reply: Gen25519Output = await this.rpc(PROVISION_RPCS.gen25519, identity, { nonce, token: config.token }, signal);
        ed25519 = validateGen25519Reply(reply, nonce);
      } catch (error) {
        return fail('gen25519', `could not fetch ed25519 public key: ${errorMessage(error)}`, error);
      }
    }

    // 4. The inventory, always.
    let inventory: InventoryOutput;
    try {
      inventory = await this.rpc(PROVISION_RPCS.inventory, identity, {}, signal);
    } catch (error) {
      return fail('inventory', `could not provision ${identity}: ${errorMessage(error)}`, error);
    }

    // 5. A CSR for the node's own name, and not a client's.
    let csr: CsrReply | null = null;
    if (config.features.pki) {
      try {
        csr = await this.rpc(PROVISION_RPCS.gencsr, identity, { token: config.token, cn: identity }, signal);
        validateCsr(csr, identity, this.denyList, this.logger);
      } catch (error) {
        return fail('gencsr', `could not provision ${identity}: ${errorMessage(error)}`, error);
      }
    }

    // 6. The helper decides the node's configuration.
    let response: HelperResponse;
    try {
      response = await this.options.helper.run(buildHelperInput({ identity, csr, ed25519, inventory, jwt: claims }), signal);
    } catch (error) {
      return fail('helper', errorMessage(error), error);
    }

    // 7. Not now: the next discovery or startup event tries again. (Upstream's spelling, kept for log searches.)
    if (response.defer) fail('defer', `configuration defered: ${response.msg}`);

    // 8. Not ever: the node is told to stop.
    if (response.shutdown) {
      this.logger.warn({ identity }, `Shutting down host based on helper output${response.msg === '' ? '' : `: ${response.msg}`}`);
      return this.shutdown(identity, signal, fail);
    }

    // 9-11. The server JWT of the ed25519 flow.
    let serverJwt = '';
    if (config.features.ed25519) {
      try {
        serverJwt = await signServerJwt({
          identity,
          ed25519PublicKey: ed25519?.public_key ?? '',
          configuration: response.configuration,
          serverClaims: response.serverClaims ?? null,
          defaultValidityMs: config.serverJwtValidityMs,
          jwtSigningKey: config.jwtSigningKey,
          jwtSigningToken: config.jwtSigningToken,
          now: this.wallClock,
          logger: this.logger,
          files: this.options.files,
        });
      } catch (error) {
        return fail('server_jwt', `could not sign a server JWT for ${identity}: ${errorMessage(error)}`, error);
      }
    }

    // 12. A private key from the helper travels encrypted for this node's ECDH key only.
    let key = '';
    let ecdhPublic = '';
    if (response.key !== '') {
      try {
        ({ key, ecdhPublic } = encryptPrivateKey(response.key, serverEcdhPublic));
      } catch (error) {
        return fail('private_key', errorMessage(error), error);
      }
    }

    // 13. An upgrade first, when the helper asks for a version the node does not run.
    if (config.features.upgrades && response.upgrade !== '') {
      const upgraded = await this.upgrade(identity, response.upgrade, inventory, signal, fail);
      if (upgraded) return 'upgraded';
    }

    // 14. Configure: every field always sent, empty values as "" or {}.
    if (Object.keys(response.configuration).length === 0) fail('configure', 'configuration failed: empty configuration');
    const ssldir = csr !== null && csr.ssldir !== '' ? csr.ssldir : response.ssldir;
    try {
      await this.rpc(
        PROVISION_RPCS.configure,
        identity,
        {
          config: JSON.stringify(response.configuration),
          token: config.token,
          ca: response.ca,
          certificate: response.certificate,
          ssldir,
          key,
          ecdh_public: ecdhPublic,
          action_policies: { ...response.actionPolicies },
          opa_policies: { ...response.opaPolicies },
          server_jwt: serverJwt,
        },
        signal,
      );
    } catch (error) {
      return fail('configure', `configuration failed: ${errorMessage(error)}`, error);
    }

    // 15. Restart into the new configuration, after a splay of 1 (2 s on the server).
    try {
      await this.rpc(PROVISION_RPCS.restart, identity, { token: config.token, splay: 1 }, signal, { lostReplyMeansGone: true });
    } catch (error) {
      if (!(error instanceof NodeGoneAfterLostReply)) return fail('restart', `restart failed: ${errorMessage(error)}`, error);
      // The node was configured, had the restart (its reply was lost with the broker) and is no
      // longer in provisioning mode: counting it as failed would disagree with the fleet.
      this.logger.warn({ identity }, `${identity} no longer answers after its restart request's reply was lost with the broker connection: it restarted; counted as provisioned`);
    }
    return 'provisioned';
  }

  /** §3.9: true when the node was updated (the cycle ends there); false to go on to configure. */
  private async upgrade(identity: string, target: string, inventory: InventoryOutput, signal: AbortSignal | undefined, fail: (step: CycleStep, message: string, cause?: unknown) => never): Promise<boolean> {
    const { config } = this.options;
    const decision = decideUpgrade({
      enabled: true,
      target,
      repository: config.upgradesRepository,
      optional: config.upgradesOptional,
      currentVersion: inventory.version,
      upgradable: inventory.upgradable,
    });
    let failure: string;
    if (decision.action === 'none' || decision.action === 'current') return false;
    if (decision.action === 'failed') failure = decision.error;
    else {
      try {
        await this.rpc(PROVISION_RPCS.release_update, identity, { repository: config.upgradesRepository, token: config.token, version: target }, signal);
        this.logger.info({ identity, from: decision.from, to: decision.to }, `Upgraded ${identity} from ${decision.from} to ${decision.to}`);
        return true;
      } catch (error) {
        if (isProvisioningLockError(error)) throw error;
        failure = releaseUpdateError(target, errorMessage(error));
      }
    }
    const outcome = upgradeFailed(failure, target, config.upgradesOptional);
    if (!outcome.continue) return fail('upgrade', outcome.error);
    this.logger.warn({ identity }, outcome.message);
    return false;
  }

  /**
   * §3.2 step 8: `shutdown` (3 tries). A reply with a non-OK status is a warning, not a failure, as
   * upstream; `helper_shutdown_requests` counts the acknowledged ones.
   */
  private async shutdown(identity: string, signal: AbortSignal | undefined, fail: (step: CycleStep, message: string, cause?: unknown) => never): Promise<CycleResult> {
    try {
      await this.rpc(PROVISION_RPCS.shutdown, identity, { token: this.options.config.token }, signal, { acceptStatusErrors: true });
    } catch (error) {
      if (error instanceof NonOkReply) {
        this.logger.warn({ identity, statusmsg: error.status.statusmsg }, `Shutdown request for ${identity} was answered with ${error.status.statusmsg} (${error.status.statuscode})`);
        return 'shutdown';
      }
      return fail('shutdown', `shutdown failed: ${errorMessage(error)}`, error);
    }
    this.options.metrics?.helperShutdownRequest();
    return 'shutdown';
  }

  /** One RPC through the retry wrapper; resolves with the reply data. */
  private rpc<I extends object, O extends object>(
    spec: ActionSpec<I, O>,
    identity: string,
    input: I,
    signal: AbortSignal | undefined,
    options: { acceptStatusErrors?: boolean; lostReplyMeansGone?: boolean } = {},
  ): Promise<O> {
    const { client, gate, metrics, rpcTimeoutMs, backoffMs, random } = this.options;
    const rpc = spec.rpc as ProvisionerRpc;
    // With lostReplyMeansGone (restart): once an attempt's reply was lost with the connection, a
    // node that still does not answer at the last try has done what it was asked and gone away.
    // Not sooner: right after the broker's return a node's own connection may not be back yet, and
    // a request lost on the way (not its reply) must reach the node to be done at all.
    let lostReply = false;
    const goneAfterLostReply = (error: unknown): boolean =>
      options.lostReplyMeansGone === true && lostReply && findCause(error, (e): e is Error => e instanceof RpcTimeoutError || e instanceof NoRespondersError) !== undefined;
    const retryable = (error: unknown): boolean => !isProvisioningLockError(error) && !(options.acceptStatusErrors && error instanceof RpcStatusError);
    const call$ = retryRpc(
      ({ signal: attemptSignal }) =>
        client.call(spec, identity, input, { signal: attemptSignal, ...(rpcTimeoutMs !== undefined ? { timeoutMs: rpcTimeoutMs } : {}) }).pipe(
          map((reply) => reply.data),
        ),
      {
        rpc,
        tries: spec.tries,
        gate,
        signal,
        scheduler: this.scheduler,
        ...(random !== undefined ? { random } : {}),
        ...(backoffMs !== undefined ? { backoffMs } : {}),
        // A status the node answered with is final for shutdown (upstream treats it as done).
        retryable,
        onAttempt: (record) => {
          if (record.error instanceof RpcConnectionLostError) lostReply = true;
          metrics?.observeRpc(rpc, record.seconds);
        },
        onFailed: (error) => {
          // P10: a lock refusal is counted on its own, not as an RPC error.
          if (isProvisioningLockError(error) || goneAfterLostReply(error)) return;
          if (!(options.acceptStatusErrors && statusErrorOf(error) !== undefined)) metrics?.rpcError(rpc);
        },
        logger: this.logger,
      },
    );
    return lastValueFrom(call$).catch((error: unknown) => {
      if (goneAfterLostReply(error)) throw new NodeGoneAfterLostReply(errorMessage(error));
      const status = options.acceptStatusErrors ? statusErrorOf(error) : undefined;
      throw status === undefined ? error : new NonOkReply(status);
    });
  }
}

/** A node that stopped answering after a reply to it was lost with the connection (restart). */
class NodeGoneAfterLostReply extends Error {}

/** A reply with a non-OK status where that is an answer, not a failure (shutdown). */
class NonOkReply extends Error {
  constructor(readonly status: RpcStatusError) {
    super(status.message);
  }
}

function statusErrorOf(error: unknown): RpcStatusError | undefined {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  if (error instanceof RpcStatusError) return error;
  return cause instanceof RpcStatusError ? cause : undefined;
}
