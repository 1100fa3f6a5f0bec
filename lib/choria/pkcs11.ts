/**
 * The `pkcs11` security provider's choices, as go-choria's `pkcs11sec` makes them, apart from the
 * token itself (`streams/choria/pkcs11Token.ts` opens it): which slot, which objects, how a request
 * is signed, and how OpenSSL's pkcs11 engine is told which key to use for TLS.
 */

/** What the `pkcs11` provider is configured with: go-choria's two keys and the CA file. */
export interface Pkcs11Settings {
  /** `plugin.security.pkcs11.driver_file`: the PKCS#11 module. */
  driverFile: string;
  /** `plugin.security.pkcs11.slot`. */
  slot: number;
  /** `plugin.security.file.ca`: the broker's certificate is verified against it. */
  ca: string;
}

/**
 * The DER prefix of a PKCS#1 v1.5 `DigestInfo` for SHA-256 (RFC 8017 §9.2): go-choria signs with
 * the raw `CKM_RSA_PKCS` mechanism over this prefix and the hash, which gives the same signature as
 * the `file` provider's `rsa.SignPKCS1v15(SHA-256)` and works on tokens without `CKM_SHA256_RSA_PKCS`.
 */
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');

/** The `CKM_RSA_PKCS` input that signs `sha256` (a SHA-256 hash) as PKCS#1 v1.5 SHA-256. */
export function sha256DigestInfo(sha256: Uint8Array): Buffer {
  if (sha256.length !== 32) throw new RangeError(`a SHA-256 hash is 32 bytes, not ${sha256.length}`);
  return Buffer.concat([SHA256_DIGEST_INFO, sha256]);
}

/**
 * The slot go-choria's provider opens: the one whose id is `configured`; else, when the module has
 * exactly one slot with a token, that one; else none, with go-choria's reason.
 */
export function choosePkcs11Slot<T extends { id: bigint }>(slots: readonly T[], configured: number): T | { problem: string } {
  const exact = slots.find((s) => s.id === BigInt(configured));
  if (exact !== undefined) return exact;
  if (slots.length === 1) return slots[0];
  const ids = slots.map((s) => s.id.toString()).join(', ');
  return {
    problem: `failed to find slot with label ${configured} (plugin.security.pkcs11.slot): the module's slots with a token are ${ids === '' ? 'none' : ids}`,
  };
}

/**
 * Why `count` objects of a kind are not the one go-choria's provider takes (it asks the token for
 * exactly one private key and one certificate, by class alone), or undefined when there is one.
 */
export function singleObjectProblem(what: 'private key' | 'certificate', count: number): string | undefined {
  if (count === 1) return undefined;
  return count === 0
    ? `failed to find ${what} object: no objects found`
    : `failed to find ${what} object: too many objects matching template (${count} on the token; go-choria takes the only one)`;
}

/** RFC 7512 percent-encoding: everything but unreserved characters, as bytes. */
function encode(value: Uint8Array | string): string {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : Buffer.from(value);
  let out = '';
  for (const byte of bytes) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}

/** What names one private key on one token. */
export interface Pkcs11KeyName {
  /** The token's serial number and label (`CK_TOKEN_INFO`, blank padding trimmed). */
  serial: string;
  token: string;
  /** The key's `CKA_ID`, and its `CKA_LABEL`: the id when it has one, else the label. */
  id: Uint8Array;
  label: string;
}

/**
 * The RFC 7512 URI of the private key, for OpenSSL's pkcs11 engine: the token by serial and label,
 * the key by `CKA_ID` (else `CKA_LABEL`). It carries no PIN: the token is already logged in when
 * the engine asks, so nothing secret can reach a line the engine prints about it.
 */
export function pkcs11KeyUri(name: Pkcs11KeyName): string {
  const parts = [`token=${encode(name.token)}`, `serial=${encode(name.serial)}`];
  if (name.id.length > 0) parts.push(`id=${encode(name.id)}`);
  else if (name.label !== '') parts.push(`object=${encode(name.label)}`);
  else throw new RangeError('the private key has neither CKA_ID nor CKA_LABEL: OpenSSL cannot name it');
  parts.push('type=private');
  return `pkcs11:${parts.join(';')}`;
}
