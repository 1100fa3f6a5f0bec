import { createHash } from 'node:crypto';

// Go's encoding/base64 StdEncoding: the standard alphabet, padded, nothing else. Node's own
// decoder skips characters it does not know, which would let a corrupt message through.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes padded standard base64 as Go's `StdEncoding` does: `undefined` for anything else. */
export function decodeBase64Strict(text: string): Buffer | undefined {
  return BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
}

/** Standard padded base64 of a string's UTF-8 bytes, or of bytes. */
export function toBase64(data: string | Uint8Array): string {
  return (typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength)).toString(
    'base64',
  );
}

/** The bytes NATS handed over, as UTF-8 text, without copying them first. */
export function utf8(data: Uint8Array): string {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
}

/** Hex MD5 (the reply subject's caller hash). */
export function md5Hex(text: string): string {
  return createHash('md5').update(text).digest('hex');
}

/** SHA-256 of bytes, or of a string's UTF-8 bytes. */
export function sha256(data: string | Uint8Array): Buffer {
  return createHash('sha256').update(data).digest();
}
