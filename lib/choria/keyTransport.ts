import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  randomBytes,
} from 'node:crypto';
import { PemBlock, decodePem, encodePem } from './pem';

/**
 * §3.8, private key transport: the provisioner encrypts a helper-supplied private key for one
 * server with an X25519 shared secret and the legacy OpenSSL PEM encryption Go's
 * `x509.EncryptPEMBlock` writes (AES-256-CBC, key from MD5 `EVP_BytesToKey` salted with the first
 * 8 bytes of the IV, PKCS#7 padding, `Proc-Type`/`DEK-Info` headers). The server decrypts with its
 * own half of the exchange. Both directions are here: the provisioner encrypts, a simulated server
 * decrypts.
 */

/** A failure of the key exchange or of the PEM encryption; the message never contains key material. */
export class KeyTransportError extends Error {
  override readonly name = 'KeyTransportError';
}

/** Raw 32-byte X25519 keys. */
export interface X25519KeyPair {
  privateKey: Buffer;
  publicKey: Buffer;
}

// DER wrappers that turn raw 32-byte X25519 keys into PKCS#8 / SPKI, which is what node:crypto imports.
const X25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');
const X25519_SPKI_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');

function rawKey(key: Uint8Array | string, what: string): Buffer {
  const bytes = typeof key === 'string' ? (/^[0-9a-fA-F]{64}$/.test(key) ? Buffer.from(key, 'hex') : undefined) : Buffer.from(key);
  if (bytes === undefined || bytes.length !== 32) throw new KeyTransportError(`${what} must be 32 bytes (64 hex characters)`);
  return bytes;
}

/** A fresh X25519 key pair, as go-choria's `ECDHKeyPair`. */
export function generateX25519KeyPair(): X25519KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('x25519');
  return {
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32),
    publicKey: publicKey.export({ format: 'der', type: 'spki' }).subarray(-32),
  };
}

/** The public half of a raw X25519 private key (scalar base multiplication). */
export function x25519PublicKey(privateKey: Uint8Array | string): Buffer {
  const key = createPrivateKey({
    key: Buffer.concat([X25519_PKCS8_PREFIX, rawKey(privateKey, 'an X25519 private key')]),
    format: 'der',
    type: 'pkcs8',
  });
  return createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(-32);
}

/** X25519(privateKey, peerPublicKey): the 32-byte shared secret both sides compute. */
export function x25519SharedSecret(privateKey: Uint8Array | string, peerPublicKey: Uint8Array | string): Buffer {
  try {
    return diffieHellman({
      privateKey: createPrivateKey({
        key: Buffer.concat([X25519_PKCS8_PREFIX, rawKey(privateKey, 'an X25519 private key')]),
        format: 'der',
        type: 'pkcs8',
      }),
      publicKey: createPublicKey({
        key: Buffer.concat([X25519_SPKI_PREFIX, rawKey(peerPublicKey, 'an X25519 public key')]),
        format: 'der',
        type: 'spki',
      }),
    });
  } catch (error) {
    if (error instanceof KeyTransportError) throw error;
    throw new KeyTransportError('could not compute the X25519 shared secret', { cause: error });
  }
}

/** OpenSSL's `EVP_BytesToKey` with MD5 and one round, as Go's legacy PEM encryption derives its key. */
export function evpBytesToKey(password: Uint8Array, salt: Uint8Array, length = 32): Buffer {
  const parts: Buffer[] = [];
  let previous = Buffer.alloc(0);
  let size = 0;
  while (size < length) {
    previous = createHash('md5').update(previous).update(password).update(salt).digest();
    parts.push(previous);
    size += previous.length;
  }
  return Buffer.concat(parts).subarray(0, length);
}

/**
 * Encrypts `bytes` into a legacy encrypted PEM block (`Proc-Type: 4,ENCRYPTED`,
 * `DEK-Info: AES-256-CBC,<iv hex>`), as Go's `x509.EncryptPEMBlock(rand, type, bytes, password, PEMCipherAES256)`.
 */
export function encryptPemBlock(type: string, bytes: Uint8Array, password: Uint8Array, iv: Uint8Array = randomBytes(16)): string {
  if (iv.length !== 16) throw new KeyTransportError('the IV must be 16 bytes');
  const cipher = createCipheriv('aes-256-cbc', evpBytesToKey(password, iv.subarray(0, 8)), iv);
  const encrypted = Buffer.concat([cipher.update(bytes), cipher.final()]);
  return encodePem({
    type,
    headers: { 'Proc-Type': '4,ENCRYPTED', 'DEK-Info': `AES-256-CBC,${Buffer.from(iv).toString('hex')}` },
    bytes: encrypted,
  });
}

/** Decrypts a legacy encrypted PEM block (AES-256-CBC only, the cipher the provisioner uses). */
export function decryptPemBlock(pem: string, password: Uint8Array): PemBlock {
  const block = decodePem(pem);
  if (block === undefined) throw new KeyTransportError('bad key received');
  if (block.headers['Proc-Type'] !== '4,ENCRYPTED') throw new KeyTransportError('key is not encrypted');
  const dek = /^AES-256-CBC,([0-9A-Fa-f]{32})$/.exec(block.headers['DEK-Info'] ?? '');
  if (dek === null) throw new KeyTransportError('unsupported or malformed DEK-Info (expected AES-256-CBC with a 16-byte IV)');
  const iv = Buffer.from(dek[1], 'hex');
  try {
    const decipher = createDecipheriv('aes-256-cbc', evpBytesToKey(password, iv.subarray(0, 8)), iv);
    return { type: block.type, headers: {}, bytes: Buffer.concat([decipher.update(block.bytes), decipher.final()]) };
  } catch (error) {
    // Go: x509.IncorrectPasswordError; a wrong secret almost always shows as bad padding.
    throw new KeyTransportError('x509: decryption password incorrect', { cause: error });
  }
}

/** What the provisioner sends in `configure`: the encrypted key, and its half of the exchange. */
export interface EncryptedKey {
  /** PEM `RSA PRIVATE KEY` with `Proc-Type`/`DEK-Info`. */
  key: string;
  /** Hex of the provisioner's ephemeral X25519 public key (`ecdh_public`). */
  ecdhPublic: string;
}

/**
 * The provisioner's side (`encryptPrivateKey`): an ephemeral X25519 key pair, the shared secret
 * with the server's `ecdh_public` (from its last `jwt` reply), and the helper's PEM key re-wrapped
 * encrypted. The block type is always `RSA PRIVATE KEY`, whatever the helper's was, as in Go.
 */
export function encryptPrivateKey(
  helperKeyPem: string,
  serverEcdhPublicHex: string,
  ephemeral: X25519KeyPair = generateX25519KeyPair(),
): EncryptedKey {
  if (serverEcdhPublicHex === '')
    throw new KeyTransportError('private key received from helper but server did not start Diffie-Hellman exchange');
  const block = decodePem(helperKeyPem);
  if (block === undefined) throw new KeyTransportError('bad key received');
  const shared = x25519SharedSecret(ephemeral.privateKey, serverEcdhPublicHex);
  return { key: encryptPemBlock('RSA PRIVATE KEY', block.bytes, shared), ecdhPublic: ephemeral.publicKey.toString('hex') };
}

/**
 * The server's side (go-choria `decryptPrivateKey`): the shared secret from its own X25519 private
 * key and the provisioner's `ecdh_public`, then the PEM decrypted and re-encoded as a plain
 * `RSA PRIVATE KEY` block.
 */
export function decryptPrivateKey(encryptedPem: string, provisionerEcdhPublicHex: string, serverPrivateKey: Uint8Array): string {
  if (provisionerEcdhPublicHex === '') throw new KeyTransportError('no ECDH Public Key');
  if (encryptedPem === '') throw new KeyTransportError('no Private Key');
  const shared = x25519SharedSecret(serverPrivateKey, provisionerEcdhPublicHex);
  const block = decryptPemBlock(encryptedPem, shared);
  return encodePem({ type: 'RSA PRIVATE KEY', headers: {}, bytes: block.bytes });
}
