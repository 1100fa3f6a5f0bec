import { existsSync, readFileSync } from 'node:fs';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ed25519PrivateKeyFromSeed, ed25519Sign } from '../../lib/choria/ed25519Keys';
import { EncodeRequestOptions } from '../../lib/choria/protocol/codec';
import type { NatsConnectionConfig } from '../natsConnection';
import { ConfigProblem, ProvisionerConfig } from '../../lib/provision/config';

/** How the daemon reaches NATS and speaks to nodes, worked out from both configuration files. */
export interface ConnectionPlan {
  /** For `openNatsConnection`; the password is in it, so the plan itself is never logged. */
  nats: NatsConnectionConfig;
  /** The request protocol: v1 unsigned (provisioning mode), or v2 with the `choria` security provider. */
  protocol: EncodeRequestOptions;
  /** Problems that stop the daemon (errors) or deserve a line (warnings). */
  problems: ConfigProblem[];
}

/** The inbox prefix every reply uses: the provisioning account may only subscribe under it (DECISIONS P13). */
export const PROVISIONING_INBOX_PREFIX = 'provisioning.reply';

/**
 * Where to connect and as whom, as upstream's `run` sets the Choria framework up (reference §1.1):
 * - servers: `rxfleet.nats_servers` when set, else the Choria config's `plugin.choria.middleware_hosts`;
 * - user `provisioner` with `broker_provisioning_password` when that is set (or `rxfleet.nats_user`
 *   / `nats_password` / `nats_credentials` to override);
 * - TLS from the Choria config's `file` security provider (`plugin.security.file.certificate`,
 *   `.key`, `.ca`) unless `choria_insecure`, which turns TLS off as upstream does;
 * - the connection is named after the identity and replies come back under `provisioning.reply`;
 * - requests are Choria protocol v1, unsigned, which provisioning-mode servers accept (the
 *   default provisioning JWT says `chs: false`); with `plugin.security.provider = choria` they are
 *   protocol v2 carrying the client JWT, signed with the seed unless `choria_insecure`.
 *
 * Every problem is collected (no servers, TLS or v2 files missing) rather than the first.
 */
export function connectionPlan(config: ProvisionerConfig, choria: ChoriaClientConfig, options: { exists?: (path: string) => boolean } = {}): ConnectionPlan {
  const { exists = existsSync } = options;
  const problems: ConfigProblem[] = [];
  const choriaFile = choria.file ?? 'choria config';
  const error = (path: string, message: string): void => void problems.push({ path, message, severity: 'error' });

  const servers = config.rxfleet.natsServers.length > 0 ? config.rxfleet.natsServers : choria.middlewareHosts;
  if (servers.length === 0) error(choriaFile, 'no NATS servers: set plugin.choria.middleware_hosts here or rxfleet.nats_servers in the provisioner configuration');

  const nats: NatsConnectionConfig = { servers, name: choria.identity, inboxPrefix: PROVISIONING_INBOX_PREFIX };
  const password = config.rxfleet.natsPassword ?? (config.brokerProvisioningPassword === '' ? undefined : config.brokerProvisioningPassword);
  const user = config.rxfleet.natsUser ?? (config.brokerProvisioningPassword === '' ? undefined : 'provisioner');
  if (user !== undefined) nats.user = user;
  if (password !== undefined) nats.password = password;
  if (config.rxfleet.natsCredentials !== undefined) {
    if (!exists(config.rxfleet.natsCredentials)) error('rxfleet.nats_credentials', `file ${JSON.stringify(config.rxfleet.natsCredentials)} does not exist`);
    nats.credentials = config.rxfleet.natsCredentials;
  }

  if (!config.choriaInsecure && choria.securityProvider === 'file') {
    const files = { certificate: choria.certificate, key: choria.key, ca: choria.ca };
    for (const [name, file] of Object.entries(files)) {
      if (file === undefined) error(choriaFile, `plugin.security.file.${name} is required for TLS to the broker (or set choria_insecure: true)`);
      else if (!exists(file)) error(choriaFile, `plugin.security.file.${name}: file ${JSON.stringify(file)} does not exist`);
    }
    if (files.certificate !== undefined && files.key !== undefined && files.ca !== undefined) nats.tls = { ca: files.ca, cert: files.certificate, key: files.key };
  }

  let protocol: EncodeRequestOptions = { version: 'v1' };
  if (choria.securityProvider === 'choria') {
    const tokenFile = choria.tokenFile;
    const seedFile = choria.seedFile;
    if (tokenFile === undefined) error(choriaFile, 'plugin.security.choria.token_file is required with plugin.security.provider = choria');
    else if (!exists(tokenFile)) error(choriaFile, `plugin.security.choria.token_file: file ${JSON.stringify(tokenFile)} does not exist`);
    if (!config.choriaInsecure) {
      if (seedFile === undefined) error(choriaFile, 'plugin.security.choria.seed_file is required with plugin.security.provider = choria (or set choria_insecure: true)');
      else if (!exists(seedFile)) error(choriaFile, `plugin.security.choria.seed_file: file ${JSON.stringify(seedFile)} does not exist`);
    }
    if (!problems.some((p) => p.severity === 'error') && tokenFile !== undefined) {
      // A file that exists may still be unreadable or hold no usable seed: a problem like the rest.
      const read = <T>(key: string, file: string, use: (text: string) => T): T | undefined => {
        try {
          return use(readFileSync(file, 'utf8').trim());
        } catch (e) {
          error(choriaFile, `plugin.security.choria.${key}: ${JSON.stringify(file)}: ${e instanceof Error ? e.message : String(e)}`);
          return undefined;
        }
      };
      const callerJwt = read('token_file', tokenFile, (text) => text);
      const seed = !config.choriaInsecure && seedFile !== undefined ? read('seed_file', seedFile, (text) => ed25519PrivateKeyFromSeed(Buffer.from(text, 'hex'))) : undefined;
      if (callerJwt !== undefined && (seed !== undefined || config.choriaInsecure)) {
        protocol = { version: 'v2', security: { callerJwt, ...(seed !== undefined ? { sign: (json: Buffer) => ed25519Sign(seed, json) } : {}) } };
      }
    }
  } else if (choria.securityProvider !== 'file') {
    error(choriaFile, `plugin.security.provider ${JSON.stringify(choria.securityProvider)} is not supported: use file or choria`);
  }
  return { nats, protocol, problems };
}
