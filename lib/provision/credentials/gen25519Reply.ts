import { randomUUID } from 'node:crypto';
import { HexDecodeError, decodeHex, ed25519Verify, ED25519_PUBLIC_KEY_SIZE, ED25519_SIGNATURE_SIZE } from '../../choria/ed25519Keys';

/** The `gen25519` reply the helper receives as `ed25519_pubkey` (`provision.ED25519Reply`). */
export interface Ed25519Reply {
  /** The node's new ed25519 public key, hex. */
  public_key: string;
  /** The node's configuration directory (where `server.seed` is and `server.jwt` will be). */
  directory: string;
  /** Hex ed25519 signature of the nonce by that key. */
  signature: string;
}

/** A `gen25519` reply the provisioner does not trust; the messages are upstream's. */
export class Gen25519ReplyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'Gen25519ReplyError';
  }
}

/** A nonce as upstream makes it (`choria.NewRequestID()`): a UUIDv4 without dashes, 32 hex characters. */
export function newGen25519Nonce(): string {
  return randomUUID().replace(/-/g, '');
}

/**
 * Checks a `gen25519` reply data object against the nonce that was sent, as upstream's
 * `fetchEd25519PubKey`, without its panic on a short key (DECISIONS P12): `public_key` and
 * `signature` must be non-empty hex (`no public key received`, `no signature received`,
 * `invalid public key received: ...`, `invalid signature`), the key must be 32 bytes and the
 * signature must verify over the nonce's bytes (`invalid nonce signature`). Returns the reply for
 * the helper input; throws {@link Gen25519ReplyError}.
 */
export function validateGen25519Reply(data: unknown, nonce: string): Ed25519Reply {
  const reply = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const text = (key: string): string => (typeof reply[key] === 'string' ? (reply[key] as string) : '');
  const publicKey = text('public_key');
  const signature = text('signature');
  if (publicKey === '') throw new Gen25519ReplyError('no public key received');
  if (signature === '') throw new Gen25519ReplyError('no signature received');
  let pk: Buffer;
  try {
    pk = decodeHex(publicKey);
  } catch (error) {
    if (error instanceof HexDecodeError) throw new Gen25519ReplyError(`invalid public key received: ${error.message}`);
    throw error;
  }
  if (pk.length !== ED25519_PUBLIC_KEY_SIZE)
    throw new Gen25519ReplyError(`invalid public key received: ${pk.length} bytes, expected ${ED25519_PUBLIC_KEY_SIZE}`);
  let sig: Buffer;
  try {
    sig = decodeHex(signature);
  } catch {
    throw new Gen25519ReplyError('invalid signature');
  }
  if (sig.length !== ED25519_SIGNATURE_SIZE) throw new Gen25519ReplyError('invalid signature');
  if (!ed25519Verify(pk, Buffer.from(nonce), sig)) throw new Gen25519ReplyError('invalid nonce signature');
  return { public_key: publicKey, directory: text('directory'), signature };
}
