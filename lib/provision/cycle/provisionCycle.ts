import { Observable, SchedulerLike, asyncScheduler, map } from 'rxjs';
import { fromAbortable } from '@rxfleet/operators';
import { errorMessage, isProvisioningLockError } from '../../choria/errors';
import { Logger, silentLogger } from '../../logger';
import { CertDenyList } from '../credentials/certDenyList';
import { CycleError, CycleStep, failStep } from './cycleError';
import { CycleHelperSteps } from './cycleHelperSteps';
import { CycleNodeCalls, SignedDelivery } from './cycleNodeCalls';
import { CycleSighting, ProvisionCycleOptions } from './cycleOptions';
import { CycleRpc } from './cycleRpc';
import { CycleTrace, helperDecision } from './cycleTrace';
import { CycleOutcome, CycleResult } from './cycleResult';
import { HostTicket } from '../sightings/sighting';
import { staleSightingError } from '../sightings/staleSighting';

export { CycleError, nodeDidNotAnswer } from './cycleError';
export type { CycleStep } from './cycleError';
export type { CycleHelper, CycleMetrics, CycleRpcClient, CycleSettings, CycleSighting, ProvisionCycleOptions } from './cycleOptions';

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
 *
 * The steps that ask the node are in `cycleNodeCalls.ts`, the provisioner's own (the helper, the
 * server JWT, the private key) in `cycleHelperSteps.ts`, the retries in `cycleRpc.ts`.
 */
export class ProvisionCycle {
  private readonly logger: Logger;
  private readonly scheduler: SchedulerLike;
  private readonly clock: () => number;
  private readonly nodeCalls: CycleNodeCalls;
  private readonly helperSteps: CycleHelperSteps;

  constructor(private readonly options: ProvisionCycleOptions) {
    const denyList = new CertDenyList(options.config.certDenyList);
    this.logger = options.logger ?? silentLogger;
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.clock = options.clock ?? (() => this.scheduler.now());
    const wallClock = options.wallClock ?? Date.now;
    const { config, client, gate, metrics, rpcTimeoutMs, backoffMs, random, files, helper, beforeAttempt, traces } = options;
    const rpc = new CycleRpc({
      client,
      traces,
      gate,
      metrics,
      rpcTimeoutMs,
      backoffMs,
      random,
      beforeAttempt,
      scheduler: this.scheduler,
      logger: this.logger,
    });
    this.nodeCalls = new CycleNodeCalls({ config, rpc, files, denyList, metrics, wallClock, logger: this.logger });
    this.helperSteps = new CycleHelperSteps({ config, helper, files, wallClock, logger: this.logger });
  }

  /**
   * The cycle for an admitted ticket, as the worker pool wants it: its outcome (an error is a failed
   * outcome, made by the pool). `hardStop` aborts it at once; so does unsubscribing.
   */
  outcome(ticket: HostTicket, hardStop?: AbortSignal): Observable<CycleOutcome> {
    return fromAbortable(
      (signal) => this.run({ identity: ticket.key, sightedAt: ticket.admittedAt }, signal),
      hardStop === undefined ? {} : { signal: hardStop },
    ).pipe(map((value): CycleOutcome => ({ status: 'done', value })));
  }

  /**
   * Runs the cycle for one node. `signal` is the hard stop (the end of the shutdown grace period):
   * it aborts an RPC attempt, a retry pause or the helper at once.
   */
  async run(sighting: CycleSighting, signal?: AbortSignal): Promise<CycleResult> {
    const { identity } = sighting;
    const { traces } = this.options;
    const trace = traces?.begin(identity);
    try {
      return await this.steps(sighting, signal, trace);
    } catch (error) {
      if (isProvisioningLockError(error)) {
        this.options.metrics?.lockRefused();
        this.logger.warn(
          { identity },
          `${identity} is being provisioned by another provisioner (its provisioning lock is held): leaving it`,
        );
        return 'locked';
      }
      if (error instanceof CycleError) throw error;
      // Every step wraps its own failures; anything else is a bug, still confined to this node.
      throw new CycleError(identity, signal?.aborted ? 'aborted' : 'internal', errorMessage(error), { cause: error });
    } finally {
      if (trace !== undefined) traces?.end(trace);
    }
  }

  private async steps(sighting: CycleSighting, signal: AbortSignal | undefined, trace: CycleTrace | undefined): Promise<CycleResult> {
    const { config } = this.options;
    const { identity } = sighting;
    const node = this.nodeCalls;
    // Each step timed and its outcome noted for the node's record (P21), when one is kept.
    const step = <T>(name: CycleStep, run: () => Promise<T>): Promise<T> => (trace === undefined ? run() : trace.step(name, run));

    // 1. A sighting that waited too long is refused; the node comes back fresh (#167).
    const stale = staleSightingError(sighting.sightedAt, this.clock(), config.intervalMs);
    if (stale !== undefined) failStep(identity, 'stale', stale);

    // 2. The provisioning JWT, and the server's ECDH key that comes with it.
    const { claims, serverEcdhPublic } = config.features.jwt
      ? await step('jwt', () => node.jwt(identity, signal))
      : { claims: null, serverEcdhPublic: '' };

    // 3. The node's new ed25519 key, proven by its signature of a nonce.
    const ed25519 = config.features.ed25519 ? await step('gen25519', () => node.gen25519(identity, signal)) : null;

    // 4. The inventory, always.
    const inventory = await step('inventory', () => node.inventory(identity, signal));

    // 5. A CSR for the node's own name, and not a client's.
    const csr = config.features.pki ? await step('gencsr', () => node.gencsr(identity, signal)) : null;

    // 6. The helper decides the node's configuration.
    const response = await step('helper', () => this.helperSteps.decide(identity, { claims, ed25519, inventory, csr }, signal));
    trace?.decided(helperDecision(response, config.token));

    // 7. Not now: the next discovery or startup event tries again. (Upstream's spelling, kept for log searches.)
    if (response.defer) failStep(identity, 'defer', `configuration defered: ${response.msg}`);

    // 8. Not ever: the node is told to stop.
    if (response.shutdown) {
      this.logger.warn({ identity }, `Shutting down host based on helper output${response.msg === '' ? '' : `: ${response.msg}`}`);
      return step('shutdown', () => node.shutdown(identity, signal));
    }

    // 9-11. The server JWT of the ed25519 flow; 12. a private key from the helper travels
    // encrypted for this node's ECDH key only.
    const signed: SignedDelivery = { serverJwt: '', key: '', ecdhPublic: '' };
    if (config.features.ed25519) signed.serverJwt = await step('server_jwt', () => this.helperSteps.serverJwt(identity, ed25519, response));
    if (response.key !== '')
      ({ key: signed.key, ecdhPublic: signed.ecdhPublic } = await step('private_key', async () =>
        this.helperSteps.privateKey(identity, response.key, serverEcdhPublic),
      ));

    // 13. An upgrade first, when the helper asks for a version the node does not run.
    if (config.features.upgrades && response.upgrade !== '') {
      const upgraded = await step('upgrade', () => node.upgrade(identity, response.upgrade, inventory, signal));
      if (upgraded) return 'upgraded';
    }

    // 14. Configure: every field always sent, empty values as "" or {}.
    await step('configure', () => node.configure(identity, response, csr, signed, signal));

    // 15. Restart into the new configuration, after a splay of 1 (2 s on the server).
    await step('restart', () => node.restart(identity, signal));
    return 'provisioned';
  }
}
