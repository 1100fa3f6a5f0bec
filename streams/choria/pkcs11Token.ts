import { X509Certificate, createHash } from 'node:crypto';
import type * as Pkcs11js from 'pkcs11js';
import { Pkcs11Settings, choosePkcs11Slot, sha256DigestInfo, singleObjectProblem } from '../../lib/choria/pkcs11';

/** The token cannot be used: the module, the slot, the PIN or the objects on it. Never holds the PIN. */
export class Pkcs11TokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Pkcs11TokenError';
  }
}

/** The token the `pkcs11` provider opened, as go-choria's `pkcs11sec` finds it. */
export interface Pkcs11Token {
  /** The slot's id, its token's label and serial number (blank padding trimmed). */
  readonly slotId: bigint;
  readonly tokenLabel: string;
  readonly serial: string;
  /** The certificate on the token, PEM: the TLS client certificate and every request's `pubcert`. */
  readonly certificatePem: string;
  /** Its subject's common name: the certname, so the caller id is `choria=<commonName>`. */
  readonly commonName: string;
  /** The private key's `CKA_ID` and `CKA_LABEL`; undefined when the token was opened without the PIN. */
  readonly key: { id: Buffer; label: string } | undefined;
  /**
   * RSA PKCS#1 v1.5 over the SHA-256 of `data`, made on the token (`CKM_RSA_PKCS` over the
   * DigestInfo, as go-choria's `SignBytes`); the key never leaves it. Throws a
   * {@link Pkcs11TokenError} without the PIN.
   */
  sign(data: Uint8Array): Buffer;
  /** Closes the session (the module stays loaded, for the process). */
  close(): void;
}

/** The pkcs11js binding: an optional native dependency, loaded only for this provider. */
type Binding = typeof Pkcs11js;

/**
 * Loads pkcs11js, or says why it cannot be: it is an optional dependency (a native add-on built
 * by `npm ci`), and the single binary does not carry it.
 */
export function loadPkcs11Binding(): Binding {
  try {
    // Required here, not imported at the top: nothing else loads a native add-on.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require('pkcs11js') as Binding;
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0];
    throw new Pkcs11TokenError(
      `the pkcs11 security provider needs the npm package pkcs11js (an optional native add-on), which cannot be loaded here: ${reason} (install rxfleet with npm where a C++ compiler is present; the single binary does not carry it)`,
    );
  }
}

const CKR_CRYPTOKI_ALREADY_INITIALIZED = 0x191;
const CKR_USER_ALREADY_LOGGED_IN = 0x100;

// One loaded module per driver file for the whole process, as go-choria's p11.OpenModule keeps
// them: PKCS#11 allows one C_Initialize per process, and OpenSSL's pkcs11 engine shares the
// module (and so the login) with it.
const modules = new Map<string, Pkcs11js.PKCS11>();

function pkcs11Reason(error: unknown): string {
  const e = error as { message?: string; code?: number };
  return e.message === undefined ? String(error) : e.message.split('\n')[0];
}

function openModule(binding: Binding, driverFile: string): Pkcs11js.PKCS11 {
  const known = modules.get(driverFile);
  if (known !== undefined) return known;
  const module = new binding.PKCS11();
  try {
    module.load(driverFile);
  } catch (error) {
    throw new Pkcs11TokenError(`failed to open PKCS11 driver file ${driverFile}: ${pkcs11Reason(error)}`);
  }
  try {
    module.C_Initialize();
  } catch (error) {
    if ((error as { code?: number }).code !== CKR_CRYPTOKI_ALREADY_INITIALIZED)
      throw new Pkcs11TokenError(`failed to initialize PKCS11 driver ${driverFile}: ${pkcs11Reason(error)}`);
  }
  modules.set(driverFile, module);
  return module;
}

function slotId(handle: Buffer): bigint {
  return handle.length >= 8 ? handle.readBigUInt64LE(0) : BigInt(handle.readUInt32LE(0));
}

/**
 * Opens the token as go-choria's `pkcs11` provider does (`loginToToken`): the module named by
 * `plugin.security.pkcs11.driver_file`, the slot `plugin.security.pkcs11.slot` (else the only slot
 * with a token), a session logged in with `pin`, then exactly one private key and one certificate
 * on the token, found by class alone, the certificate's common name being the certname (it must
 * have one). Without `pin` only the certificate is looked for (what can be read without logging
 * in) and the token cannot sign: what `validate` does when the PIN would be asked at start.
 * Errors are {@link Pkcs11TokenError}s in go-choria's words, never with the PIN.
 */
export function openPkcs11Token(
  settings: Pick<Pkcs11Settings, 'driverFile' | 'slot'>,
  pin: string | undefined,
  binding: Binding = loadPkcs11Binding(),
): Pkcs11Token {
  const p11 = openModule(binding, settings.driverFile);
  const call = <T>(what: string, fn: () => T): T => {
    try {
      return fn();
    } catch (error) {
      throw new Pkcs11TokenError(`${what}: ${pkcs11Reason(error)}`);
    }
  };
  const slots = call('failed to fetch PKCS11 driver slots', () => p11.C_GetSlotList(true)).map((handle) => ({
    handle,
    id: slotId(handle),
  }));
  const slot = choosePkcs11Slot(slots, settings.slot);
  if ('problem' in slot) throw new Pkcs11TokenError(slot.problem);
  const info = call('failed to read the token', () => p11.C_GetTokenInfo(slot.handle));
  const session = call('failed to open PKCS11 session', () => p11.C_OpenSession(slot.handle, binding.CKF_SERIAL_SESSION));
  if (pin !== undefined) {
    try {
      p11.C_Login(session, binding.CKU_USER, pin);
    } catch (error) {
      if ((error as { code?: number }).code !== CKR_USER_ALREADY_LOGGED_IN) {
        p11.C_CloseSession(session);
        throw new Pkcs11TokenError(`failed to login with provided pin: ${pkcs11Reason(error)}`);
      }
    }
  }
  const find = (objectClass: number): Buffer[] =>
    call('failed to search the token', () => {
      p11.C_FindObjectsInit(session, [{ type: binding.CKA_CLASS, value: objectClass }]);
      try {
        return p11.C_FindObjects(session, 16);
      } finally {
        p11.C_FindObjectsFinal(session);
      }
    });
  const fail = (message: string): never => {
    p11.C_CloseSession(session);
    throw new Pkcs11TokenError(message);
  };

  const certificates = find(binding.CKO_CERTIFICATE);
  const certificateProblem = singleObjectProblem('certificate', certificates.length);
  if (certificateProblem !== undefined)
    fail(
      pin === undefined && certificates.length === 0 ? `${certificateProblem} without logging in (it may be private)` : certificateProblem,
    );
  const der = call('failed to get certificate object value', () =>
    p11.C_GetAttributeValue(session, certificates[0], [{ type: binding.CKA_VALUE }]),
  )[0].value as Buffer;
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(der);
  } catch (error) {
    return fail(`failed to parse X509 certificate: ${pkcs11Reason(error)}`);
  }
  const commonName = /(?:^|\n)CN=([^\n]*)/.exec(certificate.subject)?.[1] ?? '';
  if (commonName === '') fail('cert on token must have valid CommonName');

  let key: { handle: Buffer; id: Buffer; label: string } | undefined;
  if (pin !== undefined) {
    const keys = find(binding.CKO_PRIVATE_KEY);
    const keyProblem = singleObjectProblem('private key', keys.length);
    if (keyProblem !== undefined) fail(keyProblem);
    const [id, label] = call('failed to read the private key object', () =>
      p11.C_GetAttributeValue(session, keys[0], [{ type: binding.CKA_ID }, { type: binding.CKA_LABEL }]),
    );
    key = {
      handle: keys[0],
      id: (id.value as Buffer | undefined) ?? Buffer.alloc(0),
      label: ((label.value as Buffer | undefined) ?? Buffer.alloc(0)).toString('utf8'),
    };
  }

  return {
    slotId: slot.id,
    tokenLabel: info.label.trim(),
    serial: info.serialNumber.trim(),
    certificatePem: certificate.toString(),
    commonName,
    key: key === undefined ? undefined : { id: key.id, label: key.label },
    sign(data) {
      if (key === undefined) throw new Pkcs11TokenError('the token was opened without its PIN: it cannot sign');
      const input = sha256DigestInfo(createHash('sha256').update(data).digest());
      const handle = key.handle;
      return call('could not sign message string on the token', () => {
        p11.C_SignInit(session, { mechanism: binding.CKM_RSA_PKCS }, handle);
        return Buffer.from(p11.C_Sign(session, input, Buffer.alloc(1024)));
      });
    },
    close() {
      key = undefined;
      p11.C_CloseSession(session);
    },
  };
}
