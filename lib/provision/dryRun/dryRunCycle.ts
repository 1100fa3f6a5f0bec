import { Observable, SchedulerLike, asyncScheduler, throwError } from 'rxjs';
import { InventoryOutput } from '../../choria/agents';
import { errorMessage } from '../../choria/errors';
import { Logger, silentLogger } from '../../logger';
import { SiteFiles } from '../../siteFiles';
import { CertDenyList } from '../credentials/certDenyList';
import { CycleError } from '../cycle/cycleError';
import { CycleNodeCalls } from '../cycle/cycleNodeCalls';
import { CycleHelperSteps } from '../cycle/cycleHelperSteps';
import { CycleHelper, CycleRpcClient, CycleSettings } from '../cycle/cycleOptions';
import { CycleRpc } from '../cycle/cycleRpc';
import { helperDecision } from '../cycle/cycleTrace';
import { decideUpgrade, upgradeFailed } from '../upgrade/upgradeDecision';
import { DryRunReport } from './dryRunReport';
import { StandIns, summariseCertificate } from './standIns';
import { definedFields } from '../../definedFields';

/** The only RPC a dry run sends a node: it reads, and takes no provisioning lock (go-choria locks jwt, gen25519, gencsr, configure, release_update). */
export const DRY_RUN_RPCS: ReadonlySet<string> = new Set(['rpcutil#inventory']);

/** A dry run asked to send an RPC it must not (a bug caught before the wire). */
export class DryRunRefusal extends Error {
  override readonly name = 'DryRunRefusal';
  constructor(rpc: string) {
    super(`a dry run sends no ${rpc}: it would change the node or take its provisioning lock`);
  }
}

/**
 * `client` that sends only {@link DRY_RUN_RPCS}: any other request fails with a
 * {@link DryRunRefusal} before it reaches the wire, whatever the code asking for it.
 */
export function readOnlyClient(client: CycleRpcClient): CycleRpcClient {
  return {
    call: (spec, identity, input, options) =>
      DRY_RUN_RPCS.has(spec.rpc)
        ? client.call(spec, identity, input, options)
        : (throwError(() => new DryRunRefusal(spec.rpc)) as Observable<never>),
  };
}

/** What {@link DryRunCycle} needs. */
export interface DryRunCycleOptions {
  config: CycleSettings;
  /** The RPC client; wrapped in {@link readOnlyClient} here. */
  client: CycleRpcClient;
  helper: CycleHelper;
  files: SiteFiles;
  standIns: StandIns;
  rpcTimeoutMs?: number;
  backoffMs?: readonly number[];
  random?: () => number;
  scheduler?: SchedulerLike;
  wallClock?: () => number;
  logger?: Logger;
}

/**
 * One node's provisioning cycle rehearsed (DECISIONS P23): everything a cycle decides, nothing it
 * changes. It asks the node for its inventory only; it runs the helper as a cycle would, giving it
 * stand-in keys where a cycle would have the node make new ones (`gen25519`, `gencsr` write keys
 * on the node) and no provisioning JWT (`jwt` takes the node's provisioning lock for two minutes,
 * which would hold off the provisioner in charge); it signs the server JWT (ed25519) for the
 * stand-in key and reports its claims; it reads the certificate the helper issued; it decides the
 * upgrade. It never configures, restarts, upgrades or shuts down the node.
 *
 * Guarantees: no request but {@link DRY_RUN_RPCS} leaves it (its client refuses any other);
 * every failure is the node's report (`would: 'fail'`), never thrown.
 */
export class DryRunCycle {
  private readonly nodeCalls: CycleNodeCalls;
  private readonly helperSteps: CycleHelperSteps;

  constructor(private readonly options: DryRunCycleOptions) {
    const { config, files, rpcTimeoutMs, backoffMs, random, helper } = options;
    const logger = options.logger ?? silentLogger;
    const wallClock = options.wallClock ?? Date.now;
    const rpc = new CycleRpc({
      client: readOnlyClient(options.client),
      rpcTimeoutMs,
      backoffMs,
      random,
      scheduler: options.scheduler ?? asyncScheduler,
      logger,
    });
    this.nodeCalls = new CycleNodeCalls({ config, rpc, files, denyList: new CertDenyList(config.certDenyList), wallClock, logger });
    this.helperSteps = new CycleHelperSteps({ config, helper, files, wallClock, logger });
  }

  /** What a cycle would do to `identity`. */
  async report(identity: string, signal?: AbortSignal): Promise<DryRunReport> {
    const notes: string[] = [];
    try {
      return await this.rehearse(identity, notes, signal);
    } catch (error) {
      const step = error instanceof CycleError ? error.step : 'internal';
      return { type: 'node', node: identity, would: 'fail', error: { step, message: errorMessage(error) }, notes };
    }
  }

  private async rehearse(identity: string, notes: string[], signal: AbortSignal | undefined): Promise<DryRunReport> {
    const { config, standIns } = this.options;
    const { features } = config;
    if (features.jwt)
      notes.push(
        "the node's provisioning JWT was not asked for (jwt takes its provisioning lock for two minutes): not verified here, and the helper's jwt is null",
      );
    const inventory: InventoryOutput = await this.nodeCalls.inventory(identity, signal);
    const node = { version: inventory.version, upgradable: inventory.upgradable };
    const ed25519 = features.ed25519 ? standIns.ed25519() : null;
    if (ed25519 !== null) notes.push('gen25519 was not sent (it writes a new seed on the node): the helper saw a stand-in ed25519 key');
    const csr = features.pki ? await standIns.csr(identity) : null;
    if (csr !== null)
      notes.push("gencsr was not sent (it writes a new key on the node): the helper signed a stand-in CSR for the node's name");

    const response = await this.helperSteps.decide(identity, { claims: null, ed25519, inventory, csr }, signal);
    const decision = helperDecision(response, config.token);
    const base = { type: 'node' as const, node: identity, inventory: node, decision, notes };
    if (response.defer) return { ...base, would: 'defer' };
    if (response.shutdown) return { ...base, would: 'shutdown' };

    if (features.upgrades && response.upgrade !== '') {
      const upgrade = decideUpgrade({
        enabled: true,
        target: response.upgrade,
        repository: config.upgradesRepository,
        optional: config.upgradesOptional,
        currentVersion: inventory.version,
        upgradable: inventory.upgradable,
      });
      if (upgrade.action === 'update') return { ...base, would: 'upgrade', upgrade: { from: upgrade.from, to: upgrade.to } };
      if (upgrade.action === 'failed') {
        const outcome = upgradeFailed(upgrade.error, response.upgrade, config.upgradesOptional);
        if (!outcome.continue) return { ...base, would: 'fail', error: { step: 'upgrade', message: outcome.error } };
        notes.push(outcome.message);
      }
    }

    if (Object.keys(response.configuration).length === 0)
      return { ...base, would: 'fail', error: { step: 'configure', message: 'configuration failed: empty configuration' } };
    if (response.configuration['plugin.choria.server.provision'] !== 'false')
      notes.push(
        'the configuration does not set plugin.choria.server.provision=false: the node would stay in provisioning mode and be provisioned again',
      );

    let serverJwt: Record<string, unknown> | undefined;
    if (features.ed25519) serverJwt = claimsOf(await this.helperSteps.serverJwt(identity, ed25519, response));
    if (response.key !== '' && !features.jwt)
      return {
        ...base,
        would: 'fail',
        error: { step: 'private_key', message: 'private key received from helper but server did not start Diffie-Hellman exchange' },
      };

    let certificate: DryRunReport['certificate'];
    if (response.certificate !== '') {
      try {
        certificate = summariseCertificate(response.certificate);
        if (!certificate.subject.includes(`CN=${identity}`) && !certificate.dnsNames.includes(identity))
          notes.push(`the certificate names ${certificate.subject}, not ${identity}`);
      } catch (error) {
        notes.push(`the certificate the helper returned does not parse: ${errorMessage(error)}`);
      }
    }
    let ca: string | undefined;
    if (response.ca !== '') {
      try {
        ca = summariseCertificate(response.ca).subject;
      } catch (error) {
        notes.push(`the CA the helper returned does not parse: ${errorMessage(error)}`);
      }
    }
    return {
      ...base,
      would: 'configure',
      ...definedFields({ certificate, ca, serverJwt }),
    };
  }
}

/** A JWT's claims, read without verifying it (it was signed here, a moment ago). */
function claimsOf(jwt: string): Record<string, unknown> {
  const payload = jwt.split('.')[1] ?? '';
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}
