import { generateKeyPairSync } from 'node:crypto';
import { ed25519Sign, rawEd25519PublicKey } from '../../../../lib/choria/ed25519Keys';
import { Gen25519ReplyError, newGen25519Nonce, validateGen25519Reply } from '../../../../lib/provision/credentials/gen25519Reply';

const node = generateKeyPairSync('ed25519');
const pk = rawEd25519PublicKey(node.publicKey).toString('hex');
const nonce = newGen25519Nonce();
const signature = ed25519Sign(node.privateKey, Buffer.from(nonce)).toString('hex');

describe('newGen25519Nonce', () => {
  it('is 32 hex characters, fresh every time', () => {
    expect(nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(newGen25519Nonce()).not.toBe(nonce);
  });
});

describe('validateGen25519Reply', () => {
  it('accepts a reply whose signature of the nonce verifies, returning the helper input', () => {
    expect(validateGen25519Reply({ public_key: pk, directory: '/etc/choria', signature, extra: 1 }, nonce)).toEqual({
      public_key: pk,
      directory: '/etc/choria',
      signature,
    });
  });

  it.each([
    [{ signature }, 'no public key received'],
    [{ public_key: pk }, 'no signature received'],
    [{ public_key: 'xyz', signature }, "invalid public key received: encoding/hex: invalid byte: U+0078 'x'"],
    [{ public_key: pk.slice(0, 62), signature }, 'invalid public key received: 31 bytes, expected 32'],
    [{ public_key: pk, signature: 'nothex' }, 'invalid signature'],
    [{ public_key: pk, signature: signature.slice(0, 126) }, 'invalid signature'],
    [{ public_key: pk, signature: ed25519Sign(node.privateKey, Buffer.from('another nonce')).toString('hex') }, 'invalid nonce signature'],
    [{ public_key: rawEd25519PublicKey(generateKeyPairSync('ed25519').publicKey).toString('hex'), signature }, 'invalid nonce signature'],
    [null, 'no public key received'],
    ['a string', 'no public key received'],
    [{ public_key: 42, signature }, 'no public key received'],
  ])('refuses %j: %s (a clear error, never a crash: P12)', (reply, message) => {
    expect(() => validateGen25519Reply(reply, nonce)).toThrow(new Gen25519ReplyError(message));
  });
});
