import { Gen25519Output, InventoryOutput, JwtOutput, PROVISION_RPCS } from '../../choria/agents';
import { errorMessage, isProvisioningLockError } from '../../choria/errors';
import { Logger } from '../../logger';
import { SiteFiles } from '../../siteFiles';
import { CertDenyList } from '../credentials/certDenyList';
import { CycleResult } from './cycleResult';
import { CsrReply, validateCsr } from '../credentials/csrValidation';
import { failStep, nodeDidNotAnswer } from './cycleError';
import { CycleMetrics, CycleSettings } from './cycleOptions';
import { CycleRpc, NodeGoneAfterLostReply, NonOkReply } from './cycleRpc';
import { Ed25519Reply, newGen25519Nonce, validateGen25519Reply } from '../credentials/gen25519Reply';
import { HelperResponse } from '../helper/helperResponse';
import { ProvisioningClaims, validateProvisioningJwt } from '../credentials/provisioningJwt';
import { decideUpgrade, releaseUpdateError, upgradeFailed } from '../upgrade/upgradeDecision';

/** What {@link CycleNodeCalls} needs beside the RPCs themselves. */
export interface CycleNodeCallsOptions {
  config: CycleSettings;
  rpc: CycleRpc;
  files: SiteFiles;
  denyList: CertDenyList;
  metrics?: CycleMetrics;
  /** The wall clock JWTs are checked with, ms. */
  wallClock: () => number;
  logger: Logger;
}

/** What the helper's answer is delivered to the node with: the signed server JWT and the encrypted key, or "". */
export interface SignedDelivery {
  serverJwt: string;
  key: string;
  ecdhPublic: string;
}

/**
 * The steps of a cycle that ask the node (choria-provisioner.md §3.2), each an RPC through
 * {@link CycleRpc} and the checks of its reply. Each resolves with what the next steps need, or
 * fails the node with a {@link CycleError} naming its step and carrying upstream's message (a
 * provisioning-lock refusal passes through as it is, so the cycle can end as `locked`).
 */
export class CycleNodeCalls {
  constructor(private readonly options: CycleNodeCallsOptions) {}

  /** §3.3: the provisioning JWT, verified, and the server's ECDH key that comes with it. */
  async jwt(identity: string, signal: AbortSignal | undefined): Promise<{ claims: ProvisioningClaims | null; serverEcdhPublic: string }> {
    const { config, rpc, files, wallClock } = this.options;
    let reply: JwtOutput;
    try {
      reply = await rpc.call(PROVISION_RPCS.jwt, identity, { token: config.token }, signal);
    } catch (error) {
      return failStep(identity, 'jwt', `could not fetch and validate JWT: ${identity}: ${errorMessage(error)}`, error);
    }
    let claims: ProvisioningClaims | null;
    try {
      claims = await validateProvisioningJwt(reply.jwt, config.jwtVerifyCert, files, { now: wallClock });
    } catch (error) {
      return failStep(identity, 'jwt', `could not validate JWT: ${identity}: ${errorMessage(error)}`, error);
    }
    return { claims, serverEcdhPublic: reply.ecdh_public };
  }

  /** The node's new ed25519 key, proven by its signature of a fresh nonce. */
  async gen25519(identity: string, signal: AbortSignal | undefined): Promise<Ed25519Reply> {
    const nonce = newGen25519Nonce();
    try {
      const reply: Gen25519Output = await this.options.rpc.call(
        PROVISION_RPCS.gen25519,
        identity,
        { nonce, token: this.options.config.token },
        signal,
      );
      return validateGen25519Reply(reply, nonce);
    } catch (error) {
      return failStep(identity, 'gen25519', `could not fetch ed25519 public key: ${errorMessage(error)}`, error);
    }
  }

  /** `rpcutil#inventory`, which every cycle asks. */
  async inventory(identity: string, signal: AbortSignal | undefined): Promise<InventoryOutput> {
    try {
      return await this.options.rpc.call(PROVISION_RPCS.inventory, identity, {}, signal);
    } catch (error) {
      return failStep(identity, 'inventory', `could not provision ${identity}: ${errorMessage(error)}`, error);
    }
  }

  /** A CSR for the node's own name, and not a client's (nor a denied name). */
  async gencsr(identity: string, signal: AbortSignal | undefined): Promise<CsrReply> {
    const { config, rpc, denyList, logger } = this.options;
    try {
      const csr: CsrReply = await rpc.call(PROVISION_RPCS.gencsr, identity, { token: config.token, cn: identity }, signal);
      validateCsr(csr, identity, denyList, logger);
      return csr;
    } catch (error) {
      return failStep(identity, 'gencsr', `could not provision ${identity}: ${errorMessage(error)}`, error);
    }
  }

  /**
   * §3.2 step 8: `shutdown` (3 tries). A reply with a non-OK status is a warning, not a failure, as
   * upstream; `helper_shutdown_requests` counts the acknowledged ones.
   */
  async shutdown(identity: string, signal: AbortSignal | undefined): Promise<CycleResult> {
    const { config, rpc, logger, metrics } = this.options;
    try {
      await rpc.call(PROVISION_RPCS.shutdown, identity, { token: config.token }, signal, { acceptStatusErrors: true });
    } catch (error) {
      if (error instanceof NonOkReply) {
        logger.warn(
          { identity, statusmsg: error.status.statusmsg },
          `Shutdown request for ${identity} was answered with ${error.status.statusmsg} (${error.status.statuscode})`,
        );
        return 'shutdown';
      }
      return failStep(identity, 'shutdown', `shutdown failed: ${errorMessage(error)}`, error);
    }
    metrics?.helperShutdownRequest();
    return 'shutdown';
  }

  /** §3.9: true when the node was updated (the cycle ends there); false to go on to configure. */
  async upgrade(identity: string, target: string, inventory: InventoryOutput, signal: AbortSignal | undefined): Promise<boolean> {
    const { config, rpc, logger } = this.options;
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
        await rpc.call(
          PROVISION_RPCS.release_update,
          identity,
          { repository: config.upgradesRepository, token: config.token, version: target },
          signal,
        );
        logger.info({ identity, from: decision.from, to: decision.to }, `Upgraded ${identity} from ${decision.from} to ${decision.to}`);
        return true;
      } catch (error) {
        if (isProvisioningLockError(error)) throw error;
        failure = releaseUpdateError(target, errorMessage(error));
      }
    }
    const outcome = upgradeFailed(failure, target, config.upgradesOptional);
    if (!outcome.continue) return failStep(identity, 'upgrade', outcome.error);
    logger.warn({ identity }, outcome.message);
    return false;
  }

  /**
   * `configure`: every field always sent, empty values as "" or {}; an empty configuration is
   * refused before. A failure after an attempt that went unanswered once it may have reached the
   * node says so (`nodeMayBeConfigured`): the node may hold this configuration.
   */
  async configure(
    identity: string,
    response: HelperResponse,
    csr: CsrReply | null,
    signed: SignedDelivery,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const { config, rpc } = this.options;
    if (Object.keys(response.configuration).length === 0) failStep(identity, 'configure', 'configuration failed: empty configuration');
    const ssldir = csr !== null && csr.ssldir !== '' ? csr.ssldir : response.ssldir;
    let mayBeApplied = false;
    try {
      await rpc.call(
        PROVISION_RPCS.configure,
        identity,
        {
          config: JSON.stringify(response.configuration),
          token: config.token,
          ca: response.ca,
          certificate: response.certificate,
          ssldir,
          key: signed.key,
          ecdh_public: signed.ecdhPublic,
          action_policies: { ...response.actionPolicies },
          opa_policies: { ...response.opaPolicies },
          server_jwt: signed.serverJwt,
        },
        signal,
        { onUnansweredDelivery: () => (mayBeApplied = true) },
      );
    } catch (error) {
      return failStep(identity, 'configure', `configuration failed: ${errorMessage(error)}`, error, mayBeApplied);
    }
  }

  /**
   * Restart into the new configuration, after a splay of 1 (2 s on the server). The node holds
   * that configuration now: a restart that fails because the node did not answer says so
   * (`nodeMayBeConfigured`); one the node refused does not.
   */
  async restart(identity: string, signal: AbortSignal | undefined): Promise<void> {
    const { config, rpc, logger } = this.options;
    try {
      await rpc.call(PROVISION_RPCS.restart, identity, { token: config.token, splay: 1 }, signal, { lostReplyMeansGone: true });
    } catch (error) {
      if (!(error instanceof NodeGoneAfterLostReply))
        return failStep(identity, 'restart', `restart failed: ${errorMessage(error)}`, error, nodeDidNotAnswer(error));
      // The node was configured, had the restart (its reply was lost with the broker) and is no
      // longer in provisioning mode: counting it as failed would disagree with the fleet.
      logger.warn(
        { identity },
        `${identity} no longer answers after its restart request's reply was lost with the broker connection: it restarted; counted as provisioned`,
      );
    }
  }
}
