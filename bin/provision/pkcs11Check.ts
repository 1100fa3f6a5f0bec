import { existsSync } from 'node:fs';
import { clientSecurity } from '../../lib/choria/securityProvider';
import { NO_PIN_SOURCE, pkcs11PinSource, readPinFile } from '../../streams/choria/pkcs11Pin';
import { pkcs11EngineDirectory } from '../../streams/choria/pkcs11Engine';
import { Pkcs11Token, openPkcs11Token } from '../../streams/choria/pkcs11Token';
import { nodeSiteFiles } from '../../streams/siteFiles';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ConfigProblem, ProvisionerConfig } from '../../lib/provision/config/config';

/** A problem and the file it belongs to (preflight's shape). */
interface Pkcs11Problem extends ConfigProblem {
  file: string;
}

/** What the inspection is given: both files read (preflight's context). */
export interface Pkcs11Context {
  sources: { config: string };
  config: ProvisionerConfig;
  choria: ChoriaClientConfig;
  choriaFile: string;
}

/** What {@link inspectPkcs11Token} found: the token (when it opened) and every problem. */
export interface Pkcs11Inspection {
  token: Pkcs11Token | undefined;
  problems: Pkcs11Problem[];
}

/**
 * Opens the `pkcs11` provider's token as start-up will, without asking for anything: with
 * `rxfleet.pkcs11_pin_file` it logs in and checks what go-choria's provider checks (one private
 * key, one certificate with a common name) and that the key signs; without it, the certificate is
 * read without logging in and the PIN is left to the terminal at start (an error when there is no
 * terminal). OpenSSL's pkcs11 engine must be installed. Nothing when another provider is in use,
 * TLS is off, or the configuration already has an error (the connection check says it).
 */
export function inspectPkcs11Token(context: Pkcs11Context): Pkcs11Inspection {
  const { config, choria, choriaFile, sources } = context;
  const none: Pkcs11Inspection = { token: undefined, problems: [] };
  if (config.choriaInsecure || choria.securityProvider !== 'pkcs11') return none;
  const { security } = clientSecurity(choria, { insecure: false, env: { root: false }, files: { exists: existsSync } });
  if (security?.pkcs11 === undefined) return none;
  const problems: Pkcs11Problem[] = [];
  const error = (file: string, path: string, message: string): void => void problems.push({ file, path, message, severity: 'error' });
  if (pkcs11EngineDirectory() === undefined)
    error(
      choriaFile,
      choriaFile,
      `OpenSSL's pkcs11 engine (pkcs11.so, Debian package libengine-pkcs11-openssl) is not installed: TLS with the key on the token needs it`,
    );
  const source = pkcs11PinSource(config.rxfleet.pkcs11PinFile);
  let pin: string | undefined;
  if (source.kind === 'file') {
    try {
      pin = readPinFile(nodeSiteFiles, source.file);
    } catch (e) {
      error(sources.config, 'rxfleet.pkcs11_pin_file', (e as Error).message.replace(/^rxfleet\.pkcs11_pin_file: /, ''));
      return { token: undefined, problems };
    }
  } else if (source.kind === 'none') error(sources.config, 'rxfleet.pkcs11_pin_file', NO_PIN_SOURCE);
  let token: Pkcs11Token | undefined;
  try {
    token = openPkcs11Token(security.pkcs11, pin);
    if (pin !== undefined) token.sign(Buffer.from('{}'));
  } catch (e) {
    error(choriaFile, choriaFile, `plugin.security.provider pkcs11: ${(e as Error).message}`);
  }
  return { token, problems };
}
