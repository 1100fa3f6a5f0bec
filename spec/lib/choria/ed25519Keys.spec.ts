import { generateKeyPairSync, randomBytes } from 'node:crypto';
import {
  HexDecodeError,
  decodeHex,
  ed25519PrivateKeyFromSeed,
  ed25519PublicKeyFromRaw,
  ed25519Sign,
  ed25519Verify,
  rawEd25519PublicKey,
} from '../../../lib/choria/ed25519Keys';

describe('decodeHex (hex.DecodeString)', () => {
  it('decodes either case', () => {
    expect(decodeHex('00fFaB')).toEqual(Buffer.from([0, 255, 171]));
  });

  it.each([
    ['abc', 'encoding/hex: odd length hex string'],
    ['ab\n', "encoding/hex: invalid byte: U+000A '\\n'"],
    ['zz', "encoding/hex: invalid byte: U+007A 'z'"],
  ])('refuses %j like Go', (text, message) => {
    expect(() => decodeHex(text)).toThrow(new HexDecodeError(message));
  });
});

describe('ed25519 keys', () => {
  it('a seed gives the same key pair node generates, and signatures verify over raw keys', () => {
    const seed = randomBytes(32);
    const priv = ed25519PrivateKeyFromSeed(seed);
    const pub = rawEd25519PublicKey(priv);
    expect(pub).toHaveLength(32);
    expect(rawEd25519PublicKey(ed25519PublicKeyFromRaw(pub))).toEqual(pub);
    const sig = ed25519Sign(priv, Buffer.from('nonce'));
    expect(ed25519Verify(pub, Buffer.from('nonce'), sig)).toBe(true);
    expect(ed25519Verify(pub, Buffer.from('other'), sig)).toBe(false);
  });

  it('verification with a wrong-sized key or signature is false, never a throw', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const sig = ed25519Sign(privateKey, Buffer.from('m'));
    const pub = rawEd25519PublicKey(publicKey);
    expect(ed25519Verify(pub.subarray(0, 31), Buffer.from('m'), sig)).toBe(false);
    expect(ed25519Verify(pub, Buffer.from('m'), sig.subarray(0, 63))).toBe(false);
  });

  it('refuses wrong-sized raw material', () => {
    expect(() => ed25519PublicKeyFromRaw(Buffer.alloc(31))).toThrow(RangeError);
    expect(() => ed25519PrivateKeyFromSeed(Buffer.alloc(33))).toThrow(RangeError);
  });
});
