import { fipsMode, FipsMode } from './fipsMode';
import { BrokerSource, brokerSource } from '../../lib/choria/brokerSource';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { readClientToken } from '../../lib/choria/clientToken';
import { ed25519PrivateKeyFromSeed } from '../../lib/choria/ed25519Keys';
import { EncodeRequestOptions } from '../../lib/choria/protocol/codec';
import { callerIdFor } from '../../lib/choria/protocol/subjects';
import { x509RequestSigner, x509SignerProblem } from '../../lib/choria/requestSigner';
import { ClientSecurity, SecurityEnvironment, clientSecurity } from '../../lib/choria/securityProvider';
import { SiteFiles } from '../../lib/siteFiles';
import type { NatsConnectionConfig } from '../natsConnection';
import { ConfigProblem, ProvisionerConfig } from '../../lib/provision/config/config';
import { nodeSiteFiles } from '../siteFiles';
import type { WatchedCredential } from '../credentialWatch';
import { rereadLogin } from './rereadLogin';
import { pkcs11EngineKey } from './pkcs11Engine';
import type { Pkcs11Token } from './pkcs11Token';
import { definedFields } from '../../lib/definedFields';

/** How the daemon reaches NATS and speaks to nodes, worked out from both configuration files. */
export interface ConnectionPlan {
  /**
   * For `openNatsConnection`, once `servers` is filled from {@link brokers} (listed brokers are
   * already in it; SRV ones are looked up when connecting). Credentials are in it, so the plan
   * itself is never logged.
   */
  nats: NatsConnectionConfig;
  /** Where the brokers come from: a list, DNS SRV records, or go-choria's `puppet:4222`. */
  brokers: BrokerSource;
  /** The request protocol: v1 signed with the x509 key, v1 unsigned (`choria_insecure`), or v2 (`choria` provider). */
  protocol: EncodeRequestOptions;
  /** Who the requests come from: `choria=<certname>`, or the caller id in the `choria` provider's JWT. */
  callerId: string;
  /** FIPS 140 mode, and so how the caller id is hashed in reply subjects and inboxes. */
  fips: FipsMode;
  /** The security provider in effect, when the plan has no error. */
  security: ClientSecurity | undefined;
  /** Problems that stop the daemon (errors) or deserve a line (warnings). */
  problems: ConfigProblem[];
  /** The credential files the connection reads at every attempt, for a `CredentialWatch`. */
  credentials: WatchedCredential[];
}

/** The inbox prefix every reply uses: the provisioning account may only subscribe under it (DECISIONS P13). */
export const PROVISIONING_INBOX_PREFIX = 'provisioning.reply';

/** Options for {@link connectionPlan}: the file system and process environment, for specs. */
export interface ConnectionPlanOptions {
  files?: SiteFiles;
  env?: SecurityEnvironment;
  /** The clock a token's expiry is checked against, ms. Default `Date.now`. */
  now?: () => number;
  /** FIPS 140 mode. Default this process's ({@link fipsMode}). */
  fips?: FipsMode;
  /**
   * The `pkcs11` provider's token, opened (`openPkcs11Token`): its certificate names the caller
   * and goes to the broker, its key signs the handshake and the requests. Without it a `pkcs11`
   * plan has the CA only (what `validate`'s checks need).
   */
  pkcs11?: Pkcs11Token;
}

/** This process's user, certname override, uid and home, as go-choria's providers read them. */
export function processSecurityEnvironment(): SecurityEnvironment {
  const { USER: user, MCOLLECTIVE_CERTNAME: certname, HOME: home } = process.env;
  return {
    root: process.getuid?.() === 0,
    ...definedFields({ user, certname, home }),
  };
}

/**
 * Where to connect and as whom, as upstream's `run` sets the Choria framework up (reference §1.1,
 * go-choria's connector and security providers):
 * - brokers: `rxfleet.nats_servers`, else `plugin.choria.middleware_hosts`, else DNS SRV records
 *   (with `plugin.choria.use_srv`, the default), else `puppet:4222`;
 * - user `provisioner` with `broker_provisioning_password` when that is set, else the Choria
 *   config's `plugin.nats.user` and `.pass` (`rxfleet.nats_user` / `nats_password` /
 *   `nats_credentials` override);
 * - the security provider (`clientSecurity`: `file`, `puppet` or `choria`; `file` without TLS when
 *   `choria_insecure`) gives TLS, the caller id and how requests are signed: v1 with the x509 key,
 *   v1 unsigned with `choria_insecure`, v2 with the `choria` provider's JWT and seed, which also
 *   log in to the broker (the JWT as token, the nonce signed) and set the reply inbox
 *   `provisioning.reply.<md5 of the caller id>` (sha256 in FIPS 140 mode, {@link fipsMode}); otherwise
 *   replies come back under `provisioning.reply`.
 *
 * Every problem is collected rather than the first; what only makes every node fail (a key that
 * cannot sign, an expired token) is a warning, since upstream starts with it too.
 */
export function connectionPlan(config: ProvisionerConfig, choria: ChoriaClientConfig, options: ConnectionPlanOptions = {}): ConnectionPlan {
  const { files = nodeSiteFiles, env = processSecurityEnvironment(), now = Date.now, fips = fipsMode(), pkcs11 } = options;
  const choriaFile = choria.file ?? 'choria config';
  const problems: ConfigProblem[] = [];
  const error = (path: string, message: string): void => void problems.push({ path, message, severity: 'error' });
  const warn = (path: string, message: string): void => void problems.push({ path, message, severity: 'warning' });

  const brokers = brokerSource(choria, config.rxfleet.natsServers);
  const nats: NatsConnectionConfig = {
    servers: brokers.kind === 'srv' ? [] : brokers.servers,
    name: choria.identity,
    inboxPrefix: PROVISIONING_INBOX_PREFIX,
    timeoutMs: choria.connectTimeoutMs,
  };

  const provisionerLogin = config.brokerProvisioningPassword !== '';
  const choriaLogin = choria.natsUser !== undefined && choria.natsPassword !== undefined;
  const user = config.rxfleet.natsUser ?? (provisionerLogin ? 'provisioner' : choriaLogin ? choria.natsUser : undefined);
  const password =
    config.rxfleet.natsPassword ?? (provisionerLogin ? config.brokerProvisioningPassword : choriaLogin ? choria.natsPassword : undefined);
  if (user !== undefined) nats.user = user;
  if (password !== undefined) nats.password = password;
  const credentials = config.rxfleet.natsCredentials ?? choria.natsCredentials;
  if (credentials !== undefined) {
    if (!files.exists(credentials))
      error(
        config.rxfleet.natsCredentials !== undefined ? 'rxfleet.nats_credentials' : choriaFile,
        `${config.rxfleet.natsCredentials !== undefined ? '' : 'plugin.nats.credentials: '}file ${JSON.stringify(credentials)} does not exist`,
      );
    nats.credentials = credentials;
  }

  const provider = clientSecurity(choria, { insecure: config.choriaInsecure, env, files });
  problems.push(...provider.problems);
  // The pkcs11 certname is the common name of the certificate on the token.
  const security =
    provider.security?.pkcs11 !== undefined && pkcs11 !== undefined
      ? { ...provider.security, certname: pkcs11.commonName }
      : provider.security;
  let protocol: EncodeRequestOptions = { version: 'v1' };
  let callerId = callerIdFor(security?.certname ?? choria.identity);
  if (security?.tls !== undefined) nats.tls = security.tls;

  if (security?.x509 !== undefined) {
    const problem = x509SignerProblem(files, security.x509);
    if (problem !== undefined) warn(choriaFile, `requests cannot be signed, so every request will fail, as upstream: ${problem}`);
    protocol = { version: 'v1', signer: x509RequestSigner(files, security.x509) };
  }

  if (security?.pkcs11 !== undefined && pkcs11 !== undefined && pkcs11.key !== undefined) {
    try {
      const engineKey = pkcs11EngineKey(pkcs11, security.pkcs11.driverFile);
      nats.tls = { ca: security.pkcs11.ca, verify: true, certificatePem: pkcs11.certificatePem, engineKey };
    } catch (e) {
      error(choriaFile, (e as Error).message);
    }
    // Signed on the token, as go-choria's pkcs11 provider signs: the key never leaves it.
    protocol = { version: 'v1', signer: { pubcert: () => pkcs11.certificatePem, sign: (json) => pkcs11.sign(json) } };
  }

  if (security?.jwt !== undefined) {
    const { tokenFile, seedFile } = security.jwt;
    // The files exist (the provider checked); what they hold may still be unusable.
    const read = <T>(key: string, file: string, use: (text: string) => T): T | undefined => {
      try {
        return use(files.read(file).toString('utf8').trim());
      } catch (e) {
        error(choriaFile, `plugin.security.choria.${key}: ${JSON.stringify(file)}: ${e instanceof Error ? e.message : String(e)}`);
        return undefined;
      }
    };
    const token = read('token_file', tokenFile, (text) => ({ text, info: readClientToken(text, fips.callerHash) }));
    const seed = read('seed_file', seedFile, (text) => ed25519PrivateKeyFromSeed(Buffer.from(text, 'hex')));
    if (token !== undefined && seed !== undefined) {
      // Read again for every connection and request, as go-choria: a renewed token is used without a restart.
      const login = rereadLogin({ files, tokenFile, seedFile, token: token.text, seed, now });
      if (token.info.expiresAt !== undefined && token.info.expiresAt <= now()) {
        warn(
          choriaFile,
          `plugin.security.choria.token_file: the token expired at ${new Date(token.info.expiresAt).toISOString()}: the broker will refuse every connection until it is renewed`,
        );
      }
      nats.jwtLogin = login;
      nats.inboxPrefix = `${PROVISIONING_INBOX_PREFIX}.${token.info.uniqueId}`;
      callerId = token.info.callerId;
      protocol = { version: 'v2', security: login };
    }
  }
  return {
    nats,
    brokers,
    protocol,
    callerId,
    fips,
    security: problems.some((p) => p.severity === 'error') ? undefined : security,
    problems,
    credentials: watchedCredentials(nats, security?.jwt),
  };
}

/** The files a connection with this plan logs in with, each under its `kind` label. */
function watchedCredentials(nats: NatsConnectionConfig, jwt: { tokenFile: string; seedFile: string } | undefined): WatchedCredential[] {
  const list: WatchedCredential[] = [];
  if (nats.tls?.cert !== undefined) list.push({ kind: 'tls_certificate', file: nats.tls.cert, format: 'certificate' });
  if (nats.tls?.key !== undefined) list.push({ kind: 'tls_key', file: nats.tls.key, format: 'secret' });
  if (nats.tls?.ca !== undefined) list.push({ kind: 'tls_ca', file: nats.tls.ca, format: 'certificate' });
  if (jwt !== undefined) {
    list.push({ kind: 'choria_token', file: jwt.tokenFile, format: 'token' });
    list.push({ kind: 'choria_seed', file: jwt.seedFile, format: 'secret' });
  }
  if (nats.credentials !== undefined) list.push({ kind: 'nats_credentials', file: nats.credentials, format: 'creds' });
  return list;
}
