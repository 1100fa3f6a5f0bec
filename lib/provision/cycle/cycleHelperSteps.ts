import { InventoryOutput } from '../../choria/agents';
import { errorMessage } from '../../choria/errors';
import { encryptPrivateKey } from '../../choria/keyTransport';
import { Logger } from '../../logger';
import { SiteFiles } from '../../siteFiles';
import { CsrReply } from '../credentials/csrValidation';
import { failStep } from './cycleError';
import { CycleHelper, CycleSettings } from './cycleOptions';
import { Ed25519Reply } from '../credentials/gen25519Reply';
import { buildHelperInput } from '../helper/helperInput';
import { HelperResponse } from '../helper/helperResponse';
import { ProvisioningClaims } from '../credentials/provisioningJwt';
import { signServerJwt } from '../credentials/serverJwt';

/** What {@link CycleHelperSteps} needs. */
export interface CycleHelperStepsOptions {
  config: CycleSettings;
  helper: CycleHelper;
  files: SiteFiles;
  /** The wall clock server JWTs are signed with, ms. */
  wallClock: () => number;
  logger: Logger;
}

/** What the node told the cycle before the helper is asked (null where a feature is off). */
export interface NodeFacts {
  claims: ProvisioningClaims | null;
  ed25519: Ed25519Reply | null;
  inventory: InventoryOutput;
  csr: CsrReply | null;
}

/**
 * The steps of a cycle done by the provisioner itself rather than by the node: asking the helper
 * for the node's configuration, signing the server JWT of the ed25519 flow, and encrypting the
 * helper's private key for the node's ECDH key only. Each fails the node with a {@link CycleError}
 * naming its step (`helper`, `server_jwt`, `private_key`); nothing is thrown past it.
 */
export class CycleHelperSteps {
  constructor(private readonly options: CycleHelperStepsOptions) {}

  /** §3.2 step 6: the helper decides the node's configuration from what the node told. */
  async decide(identity: string, facts: NodeFacts, signal: AbortSignal | undefined): Promise<HelperResponse> {
    const { csr, ed25519, inventory, claims } = facts;
    try {
      return await this.options.helper.run(buildHelperInput({ identity, csr, ed25519, inventory, jwt: claims }), signal);
    } catch (error) {
      return failStep(identity, 'helper', errorMessage(error), error);
    }
  }

  /** §3.2 steps 9-11: the server JWT for the node's ed25519 key and the helper's configuration and claims. */
  async serverJwt(identity: string, ed25519: Ed25519Reply | null, response: HelperResponse): Promise<string> {
    const { config, wallClock, logger, files } = this.options;
    try {
      return await signServerJwt({
        identity,
        ed25519PublicKey: ed25519?.public_key ?? '',
        configuration: response.configuration,
        serverClaims: response.serverClaims ?? null,
        defaultValidityMs: config.serverJwtValidityMs,
        jwtSigningKey: config.jwtSigningKey,
        jwtSigningToken: config.jwtSigningToken,
        now: wallClock,
        logger,
        files,
      });
    } catch (error) {
      return failStep(identity, 'server_jwt', `could not sign a server JWT for ${identity}: ${errorMessage(error)}`, error);
    }
  }

  /** §3.2 step 12: the helper's private key, encrypted for the node's ECDH key (`serverEcdhPublic`) only. */
  privateKey(identity: string, privateKey: string, serverEcdhPublic: string): { key: string; ecdhPublic: string } {
    try {
      const { key, ecdhPublic } = encryptPrivateKey(privateKey, serverEcdhPublic);
      return { key, ecdhPublic };
    } catch (error) {
      return failStep(identity, 'private_key', errorMessage(error), error);
    }
  }
}
