import { randomBytes } from 'node:crypto';

// segmentio/ksuid: 4 bytes of seconds since this epoch, 16 random bytes, base62 to 27 characters.
const KSUID_EPOCH_SECONDS = 1_400_000_000;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ENCODED_LENGTH = 27;

/**
 * A KSUID (as segmentio/ksuid makes them) for the second `atMs` falls in. Choria uses them as JWT
 * ids and, for chained tokens, checks that `iat` equals the id's time, so the two must be made
 * from the same clock reading.
 */
export function newKsuid(atMs: number, random: Uint8Array = randomBytes(16)): string {
  const seconds = Math.floor(atMs / 1000) - KSUID_EPOCH_SECONDS;
  if (seconds < 0 || seconds > 0xffffffff) throw new RangeError('time outside the KSUID range');
  if (random.length !== 16) throw new RangeError('a KSUID takes 16 random bytes');
  const bytes = Buffer.alloc(20);
  bytes.writeUInt32BE(seconds, 0);
  Buffer.from(random).copy(bytes, 4);
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(ENCODED_LENGTH, '0');
}

/** The time (milliseconds, whole seconds) a KSUID was made at; throws on anything else. */
export function ksuidTime(id: string): number {
  if (id.length !== ENCODED_LENGTH || /[^0-9A-Za-z]/.test(id)) throw new TypeError(`not a KSUID: ${JSON.stringify(id)}`);
  let n = 0n;
  for (const ch of id) n = n * 62n + BigInt(ALPHABET.indexOf(ch));
  if (n >= 1n << 160n) throw new TypeError(`not a KSUID: ${JSON.stringify(id)}`);
  return (Number(n >> 128n) + KSUID_EPOCH_SECONDS) * 1000;
}
