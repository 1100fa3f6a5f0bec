import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pkcs11KeyUri } from '../../lib/choria/pkcs11';
import type { Pkcs11Token } from './pkcs11Token';

/** Node's TLS options that make OpenSSL sign the handshake with a key held by an engine. */
export interface EngineKey {
  /** `privateKeyEngine`. */
  engine: string;
  /** `privateKeyIdentifier`: the key's RFC 7512 URI. */
  identifier: string;
}

/** Where Debian and others install OpenSSL 3's engines (libengine-pkcs11-openssl puts pkcs11.so there). */
function engineDirectories(): string[] {
  const multiarch = {
    x64: 'x86_64-linux-gnu',
    arm64: 'aarch64-linux-gnu',
    arm: 'arm-linux-gnueabihf',
    ppc64: 'powerpc64le-linux-gnu',
    s390x: 's390x-linux-gnu',
  }[process.arch as string];
  return [...(multiarch !== undefined ? [`/usr/lib/${multiarch}/engines-3`] : []), '/usr/lib64/engines-3', '/usr/lib/engines-3'];
}

function engineCandidates(env: NodeJS.ProcessEnv): string[] {
  return [...(env.OPENSSL_ENGINES !== undefined && env.OPENSSL_ENGINES !== '' ? [env.OPENSSL_ENGINES] : []), ...engineDirectories()];
}

/** The directory holding OpenSSL's pkcs11 engine (`OPENSSL_ENGINES` first), or undefined when it is not installed. */
export function pkcs11EngineDirectory(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return engineCandidates(env).find((d) => existsSync(join(d, 'pkcs11.so')));
}

/**
 * How TLS to the broker signs with the token's key without the key leaving it: OpenSSL's pkcs11
 * engine (libp11, Debian's `libengine-pkcs11-openssl`) loaded by Node's `privateKeyEngine`, the
 * key named by its URI. The engine opens the same module (`PKCS11_MODULE_PATH`, which it reads)
 * in this process, so it shares the login the token was opened with and needs no PIN of its own.
 * Node's OpenSSL looks for engines in `OPENSSL_ENGINES`: set to the directory holding `pkcs11.so`
 * (`OPENSSL_ENGINES` as given when it has one). Both variables are this process's environment, so
 * its children (the helper) inherit them. Throws when the engine is not installed or the token was
 * opened without its PIN.
 */
export function pkcs11EngineKey(token: Pkcs11Token, driverFile: string, env: NodeJS.ProcessEnv = process.env): EngineKey {
  if (token.key === undefined) throw new Error('the token was opened without its PIN: its key cannot be used for TLS');
  const dir = pkcs11EngineDirectory(env);
  if (dir === undefined)
    throw new Error(
      `OpenSSL's pkcs11 engine (pkcs11.so, Debian package libengine-pkcs11-openssl) is not installed: TLS with the key on the token needs it (looked in ${engineCandidates(env).join(', ')})`,
    );
  env.OPENSSL_ENGINES = dir;
  env.PKCS11_MODULE_PATH = driverFile;
  return {
    engine: 'pkcs11',
    identifier: pkcs11KeyUri({ serial: token.serial, token: token.tokenLabel, id: token.key.id, label: token.key.label }),
  };
}
