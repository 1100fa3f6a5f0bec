import { join } from 'node:path/posix';
import { SiteFiles } from '../siteFiles';
import { certManagerSecurity } from './certManagerSecurity';
import { ChoriaClientConfig, ChoriaConfigProblem } from './clientConfig';
import { Pkcs11Settings } from './pkcs11';
import { definedFields } from '../definedFields';

/** What go-choria's providers read from the process: who runs it and the certname override. */
export interface SecurityEnvironment {
  /** `$USER`. */
  user?: string;
  /** `$MCOLLECTIVE_CERTNAME`: a certname every x509 provider takes before its own default. */
  certname?: string;
  /** Whether the process runs as root (uid 0). */
  root: boolean;
  /** `$HOME`. */
  home?: string;
}

/** TLS material to the broker (file names), and whether the broker's certificate is verified. */
export interface ClientTlsFiles {
  ca?: string;
  cert?: string;
  key?: string;
  /** False: encrypted, but any broker certificate is accepted (go-choria's `InsecureSkipVerify`). */
  verify: boolean;
}

/** The security provider a Choria client ends up with: names, TLS, request signing, broker login. */
export interface ClientSecurity {
  /** The provider in effect: `choria_insecure` forces `file`, as upstream. */
  provider: 'file' | 'choria' | 'puppet' | 'pkcs11' | 'certmanager';
  /**
   * The provider's certname: `choria=<certname>` is the caller id of x509 requests. Empty for
   * `pkcs11`, whose certname is the common name of the certificate on the token.
   */
  certname: string;
  /** TLS to the broker; undefined when TLS is off (`choria_insecure`). */
  tls?: ClientTlsFiles;
  /** The x509 certificate and key v1 requests are signed with; undefined: unsigned (`insecure`). */
  x509?: { certificate: string; key: string; ca: string };
  /** The `choria` provider's client JWT and ed25519 seed: the broker login and v2 signatures. */
  jwt?: { tokenFile: string; seedFile: string };
  /** The `pkcs11` provider's token: its key signs the TLS handshake and v1 requests; `tls` has the CA only. */
  pkcs11?: Pkcs11Settings;
}

/** Options for {@link clientSecurity}. */
export interface ClientSecurityOptions {
  /** The provisioner's `choria_insecure`: no TLS, unsigned v1 requests, the `file` provider. */
  insecure: boolean;
  env: SecurityEnvironment;
  /** How file existence is checked (go-choria's providers validate their files before starting). */
  files: Pick<SiteFiles, 'exists'>;
}

/** Where the Puppet SSL directory is when `plugin.choria.ssldir` is not set. */
export function defaultPuppetSslDir(env: SecurityEnvironment): string | undefined {
  if (env.root) return '/etc/puppetlabs/puppet/ssl';
  return env.home === undefined || env.home === '' ? undefined : join(env.home, '.puppetlabs/etc/puppet/ssl');
}

/**
 * Works out the client's security the way go-choria's framework sets its provider up for a client
 * (`choria/framework.go` `setupSecurity`, the providers' `WithChoriaConfig` and `Validate`):
 *
 * - `choria_insecure` forces the `file` provider with TLS off and unsigned requests, and skips the
 *   provider's checks, as upstream's `run` does.
 * - `file`: `plugin.security.file.certificate`, `.key` and `.ca`, each required and present; TLS
 *   verified both ways; requests signed with that key. Certname `$MCOLLECTIVE_CERTNAME`, else
 *   `<$USER>.mcollective` for a user other than root, else the identity.
 * - `puppet`: the Puppet SSL layout under `plugin.choria.ssldir` (default `/etc/puppetlabs/puppet/ssl`
 *   for root, `~/.puppetlabs/etc/puppet/ssl` otherwise): `certs/<certname>.pem`,
 *   `private_keys/<certname>.pem`, `certs/ca.pem`, each present. Certname `$MCOLLECTIVE_CERTNAME`,
 *   else `<$USER>.mcollective`, as go-choria; `plugin.security.certname` (not a go-choria key) only
 *   when neither is set (go-choria would refuse to start), with a warning either way.
 * - `choria`: `plugin.security.choria.token_file` and `.seed_file` required and present; TLS with
 *   `.certificate` and `.key` when both exist, verified against `.ca` when it exists and otherwise
 *   encrypted without verification (a configured file that is missing is a warning, since
 *   upstream then silently skips it).
 * - `pkcs11`: `plugin.security.pkcs11.driver_file` required and present, `plugin.security.file.ca`
 *   present; the key and certificate are on the token (`plugin.security.pkcs11.slot`), found when
 *   it is opened; TLS verified both ways, v1 requests signed on the token.
 * - `certmanager`: the files cert-manager's enrolment left in `plugin.choria.ssldir` (`cert.pem`,
 *   `key.pem`, `ca.pem`), used as the `file` provider uses its own; certname `$MCOLLECTIVE_CERTNAME`,
 *   else the identity ({@link certManagerSecurity}).
 *
 * Every problem is returned, each naming the key and the file; `security` is undefined when any is
 * an error.
 */
export function clientSecurity(
  choria: ChoriaClientConfig,
  options: ClientSecurityOptions,
): { security: ClientSecurity | undefined; problems: ChoriaConfigProblem[] } {
  const { insecure, env, files } = options;
  const where = choria.file ?? 'choria config';
  const problems: ChoriaConfigProblem[] = [];
  const error = (message: string): void => void problems.push({ path: where, message, severity: 'error' });
  const checks: ProviderChecks = {
    error,
    warn: (message) => void problems.push({ path: where, message, severity: 'warning' }),
    exists: (file) => files.exists(file),
    needed: (key, file, unset) => {
      if (file === undefined) error(`${key} is required ${unset}`);
      else if (!files.exists(file)) error(`${key}: file ${JSON.stringify(file)} does not exist`);
      return file ?? '';
    },
  };
  const result = (security: ClientSecurity): { security: ClientSecurity | undefined; problems: ChoriaConfigProblem[] } => ({
    security: problems.some((p) => p.severity === 'error') ? undefined : security,
    problems,
  });
  const { needed } = checks;
  const fileCertname =
    env.certname ?? (!env.root && env.user !== undefined && env.user !== '' ? `${env.user}.mcollective` : choria.identity);

  if (insecure) return result({ provider: 'file', certname: fileCertname });

  switch (choria.securityProvider) {
    case 'file': {
      const unset = 'for TLS to the broker and signed requests with the file security provider (or set choria_insecure: true)';
      const certificate = needed('plugin.security.file.certificate', choria.certificate, unset);
      const key = needed('plugin.security.file.key', choria.key, unset);
      const ca = needed('plugin.security.file.ca', choria.ca, unset);
      return result({
        provider: 'file',
        certname: fileCertname,
        tls: { ca, cert: certificate, key, verify: true },
        x509: { certificate, key, ca },
      });
    }
    case 'puppet':
      return result(puppetSecurity(choria, env, checks));
    case 'choria':
      return result(choriaSecurity(choria, env, checks));
    case 'pkcs11': {
      const unset = 'with plugin.security.provider = pkcs11';
      const driverFile = needed('plugin.security.pkcs11.driver_file', choria.pkcs11DriverFile, unset);
      const ca = needed('plugin.security.file.ca', choria.ca, `${unset}: the broker's certificate is verified against it`);
      return result({ provider: 'pkcs11', certname: '', tls: { ca, verify: true }, pkcs11: { driverFile, slot: choria.pkcs11Slot, ca } });
    }
    case 'certmanager': {
      const found = certManagerSecurity({
        sslDir: choria.sslDir,
        identity: choria.identity,
        certnameOverride: env.certname,
        exists: (f) => files.exists(f),
      });
      found.errors.forEach(error);
      if (found.files === undefined) return result({ provider: 'certmanager', certname: found.certname });
      const { certificate, key, ca } = found.files;
      return result({
        provider: 'certmanager',
        certname: found.certname,
        tls: { ca, cert: certificate, key, verify: true },
        x509: { certificate, key, ca },
      });
    }
  }
}

/** How a provider's checks report what is wrong (each problem naming the key and the file) and look at files. */
interface ProviderChecks {
  error(message: string): void;
  warn(message: string): void;
  exists(file: string): boolean;
  /** A file the provider needs: configured and present, or one error saying which (`unset` ends the message when it is not configured). */
  needed(key: string, file: string | undefined, unset: string): string;
}

/** go-choria's `puppet` provider: its certname and the Puppet SSL layout (see {@link clientSecurity}). */
function puppetSecurity(choria: ChoriaClientConfig, env: SecurityEnvironment, checks: ProviderChecks): ClientSecurity {
  const { error, warn } = checks;
  // go-choria's puppet provider: MCOLLECTIVE_CERTNAME, else <USER>.mcollective (root too). The
  // file's plugin.security.certname (not a go-choria key) never changes that choice.
  const upstream = env.certname ?? (env.user !== undefined && env.user !== '' ? `${env.user}.mcollective` : undefined);
  const certname = upstream ?? choria.certname;
  if (choria.certname !== undefined && upstream === undefined)
    warn(
      `plugin.security.certname is not a go-choria key: rxfleet names the certificate ${choria.certname} by it, where go-choria would refuse to start (neither MCOLLECTIVE_CERTNAME nor USER is set)`,
    );
  else if (choria.certname !== undefined && choria.certname !== upstream)
    warn(
      `plugin.security.certname is not a go-choria key and does not change the certname: ${upstream} (MCOLLECTIVE_CERTNAME, else <USER>.mcollective), as go-choria chooses it`,
    );
  const sslDir = choria.sslDir ?? defaultPuppetSslDir(env);
  if (certname === undefined)
    error(
      'the puppet security provider cannot name its certificate: set plugin.security.certname here, or MCOLLECTIVE_CERTNAME or USER in the environment (or pick another plugin.security.provider)',
    );
  if (sslDir === undefined) error('the puppet security provider cannot find its SSL directory: set plugin.choria.ssldir (HOME is not set)');
  if (certname === undefined || sslDir === undefined) return { provider: 'puppet', certname: '' };
  const layout = (file: string, what: string): string => {
    if (!checks.exists(file))
      error(
        `the puppet security provider needs the ${what} ${JSON.stringify(file)} (plugin.choria.ssldir ${sslDir}, certname ${certname}), which does not exist`,
      );
    return file;
  };
  const certificate = layout(join(sslDir, 'certs', `${certname}.pem`), 'certificate');
  const key = layout(join(sslDir, 'private_keys', `${certname}.pem`), 'private key');
  const ca = layout(join(sslDir, 'certs', 'ca.pem'), 'CA');
  return { provider: 'puppet', certname, tls: { ca, cert: certificate, key, verify: true }, x509: { certificate, key, ca } };
}

/**
 * go-choria's `choria` provider: the client JWT and seed it needs, and TLS with what it finds of
 * its certificate, key and CA (see {@link clientSecurity}).
 */
function choriaSecurity(choria: ChoriaClientConfig, env: SecurityEnvironment, checks: ProviderChecks): ClientSecurity {
  const unset = 'with plugin.security.provider = choria';
  const tokenFile = checks.needed('plugin.security.choria.token_file', choria.tokenFile, unset);
  const seedFile = checks.needed('plugin.security.choria.seed_file', choria.seedFile, unset);
  const present = (key: string, file: string | undefined, consequence: string): string | undefined => {
    if (file === undefined) return undefined;
    if (checks.exists(file)) return file;
    checks.warn(`${key}: file ${JSON.stringify(file)} does not exist: ${consequence}, as go-choria does`);
    return undefined;
  };
  const cert = present('plugin.security.choria.certificate', choria.choriaCertificate, 'no client certificate is sent');
  const key = present('plugin.security.choria.key', choria.choriaKey, 'no client certificate is sent');
  const ca = present('plugin.security.choria.ca', choria.choriaCa, "the broker's certificate is not verified");
  const tls: ClientTlsFiles = {
    verify: ca !== undefined,
    ...definedFields({ ca }),
    ...(cert !== undefined && key !== undefined ? { cert, key } : {}),
  };
  return { provider: 'choria', certname: env.user ?? choria.identity, tls, jwt: { tokenFile, seedFile } };
}
