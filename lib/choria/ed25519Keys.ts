import { KeyObject, createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';

/** ed25519 public keys and signatures have these sizes in bytes. */
export const ED25519_PUBLIC_KEY_SIZE = 32;
export const ED25519_SEED_SIZE = 32;
export const ED25519_SIGNATURE_SIZE = 64;

/** Text that is not hex; the message is Go's `encoding/hex` one. */
export class HexDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HexDecodeError';
  }
}

/**
 * Decodes hex exactly as Go's `hex.DecodeString`: upper or lower case digits only, an even
 * length, no whitespace. Throws {@link HexDecodeError} with Go's message otherwise.
 */
export function decodeHex(text: string): Buffer {
  const bad = /[^0-9a-fA-F]/.exec(text);
  if (bad !== null) {
    const code = bad[0].codePointAt(0) ?? 0;
    throw new HexDecodeError(
      `encoding/hex: invalid byte: U+${code.toString(16).toUpperCase().padStart(4, '0')} ${JSON.stringify(bad[0]).replace(/^"|"$/g, "'")}`,
    );
  }
  if (text.length % 2 !== 0) throw new HexDecodeError('encoding/hex: odd length hex string');
  return Buffer.from(text, 'hex');
}

/** A public key object from the 32 raw bytes Choria exchanges (hex on the wire). Throws on another size. */
export function ed25519PublicKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== ED25519_PUBLIC_KEY_SIZE)
    throw new RangeError(`invalid ed25519 public key size: ${raw.length} bytes, expected ${ED25519_PUBLIC_KEY_SIZE}`);
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(raw).toString('base64url') }, format: 'jwk' });
}

// PKCS#8 wrapping of a raw ed25519 seed (RFC 8410): a fixed prefix, then the 32 seed bytes.
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** A private key object from a 32-byte seed (what Choria's `.seed` files hold, hex encoded). */
export function ed25519PrivateKeyFromSeed(seed: Uint8Array): KeyObject {
  if (seed.length !== ED25519_SEED_SIZE)
    throw new RangeError(`invalid ed25519 seed length: ${seed.length} bytes, expected ${ED25519_SEED_SIZE}`);
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/** The 32 raw bytes of an ed25519 public (or private) key object. */
export function rawEd25519PublicKey(key: KeyObject): Buffer {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const jwk = publicKey.export({ format: 'jwk' });
  if (jwk.crv !== 'Ed25519' || jwk.x === undefined) throw new TypeError('not an ed25519 key');
  return Buffer.from(jwk.x, 'base64url');
}

/** Signs `message` with an ed25519 private key: 64 bytes. */
export function ed25519Sign(privateKey: KeyObject, message: Uint8Array): Buffer {
  return sign(null, message, privateKey);
}

/**
 * Whether `signature` is a valid ed25519 signature of `message` by the 32-byte `publicKey`.
 * Never throws: a key or signature of the wrong size is simply not valid (Go panics on the key).
 */
export function ed25519Verify(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== ED25519_PUBLIC_KEY_SIZE || signature.length !== ED25519_SIGNATURE_SIZE) return false;
  try {
    return verify(null, message, ed25519PublicKeyFromRaw(publicKey), signature);
  } catch {
    return false;
  }
}
