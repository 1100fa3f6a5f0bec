import { resolve } from 'node:path';
import { SiteDir, siteDir } from '../choriaSite';
import { choria } from './choriaCommand';
import { ChoriaBroker, startChoriaBroker } from './choriaBroker';
import { ChoriaServers, startChoriaServers } from './choriaServers';
import { SiteCredentials, SiteFlow, provisioningJwt, siteCredentials } from './siteCredentials';

/** The spec's PKI helper: signs each node's CSR with the site's CA (features.pki). */
export const PKI_HELPER = resolve(__dirname, '../../fixtures/helpers/pki-helper.mjs');
/** The sample ed25519 helper (features.ed25519), as a site with an organisation issuer runs it. */
export const ED25519_HELPER = resolve(__dirname, '../../../examples/helpers/ed25519-helper.mjs');

/** Options for {@link startChoriaSite}. */
export interface ChoriaSiteOptions {
  flow: SiteFlow;
  /** How many go-choria servers start in provisioning mode. */
  servers: number;
  /** The provisioning token (`cht`). Default `s3cret-token`. */
  token?: string;
  /** `chs`: servers want signed requests. Default: true with an organisation issuer, false with x509 (`choria jwt prov`'s default). */
  secure?: boolean;
  /** The election bucket's TTL. Default 10s. */
  electionTtl?: string;
  /**
   * The security lines of the provisioner's Choria configuration, made once the site's
   * credentials exist (a token holding a key the site's CA certified, say). Default: the flow's
   * own (`file` with the provisioner's certificate, or `choria` with its JWT and seed).
   */
  provisionerSecurity?: (credentials: SiteCredentials) => Promise<string[]>;
}

/** A real Choria site: a broker, provisioning-mode servers, and what a provisioner and an operator need to reach them. */
export interface ChoriaSite {
  readonly flow: SiteFlow;
  readonly dir: SiteDir;
  readonly credentials: SiteCredentials;
  readonly broker: ChoriaBroker;
  readonly servers: ChoriaServers;
  readonly token: string;
  readonly provisionerPassword: string;
  /** The provisioner's Choria client configuration file (go-choria's format). */
  readonly provisionerChoriaConfig: string;
  /** The YAML lines a provisioner for this site's flow needs (token, password, features, JWT files). */
  provisionerYaml(): string[];
  /**
   * Writes `<name>.yaml` in the site's directory for `rxfleet provision` on this site: this flow's
   * helper, no monitor port, then `lines` (workers, site, election, an `rxfleet:` section), then
   * {@link provisionerYaml}. Returns its path.
   */
  provisionerConfig(name: string, lines?: string[]): string;
  /** The helper for this flow, and the environment it reads. */
  readonly helper: { command: string; env: Record<string, string> };
  /** The identities `choria ping` finds as configured servers (the operator's client, main collective). */
  ping(expect?: number): Promise<string[]>;
  /** `choria req <agent> <action> --json` as the operator: the replies' `sender`, `statuscode` and `data`. */
  request(agent: string, action: string, expect?: number): Promise<{ sender: string; statuscode: number; data: Record<string, unknown> }[]>;
  stop(): Promise<void>;
}

/**
 * Starts a Choria site on this machine with the real go-choria (scripts/go-peers.sh): credentials
 * for the flow, a Choria Broker, and `servers` go-choria servers in provisioning mode, each its own
 * host (identity), restarted as a service manager would. `stop()` leaves nothing behind.
 */
export async function startChoriaSite(options: ChoriaSiteOptions): Promise<ChoriaSite> {
  const dir = siteDir(`rxfleet-gochoria-${options.flow}-`);
  const token = options.token ?? 's3cret-token';
  const provisionerPassword = 'prov-pw-2718';
  let broker: ChoriaBroker | undefined;
  let servers: ChoriaServers | undefined;
  try {
    const credentials = await siteCredentials(dir, options.flow);
    broker = await startChoriaBroker(dir, credentials, {
      provisionerPassword,
      ...(options.electionTtl !== undefined ? { electionTtl: options.electionTtl } : {}),
    });
    const jwt = await provisioningJwt(dir, credentials, { token, urls: broker.url, secure: options.secure ?? options.flow === 'issuer' });
    servers = startChoriaServers({ dir: dir.path, count: options.servers, provisioningJwt: jwt, domain: `${options.flow}.example.net` });
    const b = broker;
    const s = servers;
    const security =
      options.provisionerSecurity !== undefined
        ? await options.provisionerSecurity(credentials)
        : credentials.flow === 'x509'
          ? [
              'plugin.security.provider = file',
              `plugin.security.file.certificate = ${credentials.provisioner.cert}`,
              `plugin.security.file.key = ${credentials.provisioner.key}`,
              `plugin.security.file.ca = ${credentials.ca}`,
            ]
          : [
              'plugin.security.provider = choria',
              `plugin.security.choria.token_file = ${credentials.provisioner.jwt}`,
              `plugin.security.choria.seed_file = ${credentials.provisioner.seed}`,
              `plugin.security.choria.ca = ${credentials.ca}`,
              'plugin.security.issuer.names = choria',
              `plugin.security.issuer.choria.public = ${credentials.issuer!.publicKey}`,
            ];
    const provisionerChoriaConfig = dir.file(
      'provisioner-choria.cfg',
      ['identity = provisioner.mcollective', `plugin.choria.middleware_hosts = ${b.url}`, ...security, ''].join('\n'),
    );
    const adminConfig = dir.file(
      'admin-client.cfg',
      [
        `identity = ${credentials.admin.identity}`,
        `plugin.choria.middleware_hosts = ${b.url}`,
        // The client logs to stdout, where --names prints the names.
        'loglevel = error',
        ...(credentials.flow === 'x509'
          ? [
              'plugin.security.provider = file',
              `plugin.security.certname = ${credentials.admin.identity}`,
              `plugin.security.file.certificate = ${credentials.admin.cert}`,
              `plugin.security.file.key = ${credentials.admin.key}`,
              `plugin.security.file.ca = ${credentials.ca}`,
            ]
          : [
              'plugin.security.provider = choria',
              `plugin.security.choria.token_file = ${credentials.admin.jwt}`,
              `plugin.security.choria.seed_file = ${credentials.admin.seed}`,
              'plugin.security.issuer.names = choria',
              `plugin.security.issuer.choria.public = ${credentials.issuer!.publicKey}`,
            ]),
        '',
      ].join('\n'),
    );
    // go-choria's client takes its certname (x509) or refuses to start (issuer) without USER.
    const clientEnv = { ...process.env, USER: process.env.USER ?? 'root' };
    const helper: { command: string; env: Record<string, string> } =
      credentials.flow === 'x509'
        ? {
            command: PKI_HELPER,
            env: { RXFLEET_HELPER_CA_CERT: credentials.ca, RXFLEET_HELPER_CA_KEY: credentials.caKey, RXFLEET_HELPER_BROKERS: b.url },
          }
        : { command: ED25519_HELPER, env: { RXFLEET_HELPER_ISSUER: credentials.issuer!.publicKey, RXFLEET_HELPER_BROKERS: b.url } };
    const provisionerYaml = (): string[] => [
      `token: ${token}`,
      `broker_provisioning_password: ${provisionerPassword}`,
      ...(credentials.flow === 'x509'
        ? ['features: {pki: true, jwt: true}', `jwt_verify_cert: ${credentials.signer!.cert}`]
        : [
            'features: {jwt: true, ed25519: true}',
            `jwt_verify_cert: ${credentials.issuer!.publicKey}`,
            `jwt_signing_key: ${credentials.provisioner.seed}`,
            `jwt_signing_token: ${credentials.provisioner.jwt}`,
          ]),
    ];
    return {
      flow: options.flow,
      dir,
      credentials,
      broker: b,
      servers: s,
      token,
      provisionerPassword,
      provisionerChoriaConfig,
      helper,
      provisionerYaml,
      provisionerConfig(name, lines = []) {
        return dir.file(`${name}.yaml`, [`helper: ${helper.command}`, 'monitor_port: 0', ...lines, ...provisionerYaml(), ''].join('\n'));
      },
      async ping(expect) {
        const args = [
          'ping',
          '--config',
          adminConfig,
          '--names',
          '--timeout',
          '5',
          ...(expect !== undefined ? ['--expect', String(expect)] : []),
        ];
        const { stdout } = await choria(args, { env: clientEnv }).catch((error: Error) => {
          // No reply at all is an exit 1 ("no responses received"): nobody is configured yet.
          if (error.message.includes('no responses received')) return { stdout: '' };
          throw error;
        });
        return stdout
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l !== '' && !l.startsWith('time='))
          .sort();
      },
      async request(agent, action, expect) {
        const args = [
          'req',
          agent,
          action,
          '--config',
          adminConfig,
          '--json',
          '--discovery-timeout',
          '3',
          ...(expect !== undefined ? ['--expect', String(expect)] : []),
        ];
        const { stdout } = await choria(args, { env: clientEnv });
        const parsed = JSON.parse(stdout) as { replies: { sender: string; statuscode: number; data: Record<string, unknown> }[] };
        return parsed.replies.map(({ sender, statuscode, data }) => ({ sender, statuscode, data }));
      },
      async stop() {
        await s.stop();
        await b.stop();
        dir.remove();
      },
    };
  } catch (error) {
    await servers?.stop();
    await broker?.stop();
    dir.remove();
    throw error;
  }
}
