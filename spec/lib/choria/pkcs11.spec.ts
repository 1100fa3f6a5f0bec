import { createHash, constants, generateKeyPairSync, privateEncrypt, sign } from 'node:crypto';
import { choosePkcs11Slot, pkcs11KeyUri, sha256DigestInfo, singleObjectProblem } from '../../../lib/choria/pkcs11';

describe('the pkcs11 provider: slot, objects, signature input and key URI, as go-choria chooses them', () => {
  const slots = [{ id: 1434613542n }, { id: 1n }];

  it('takes the configured slot; else the only one with a token; else refuses naming the ones there are', () => {
    expect(choosePkcs11Slot(slots, 1434613542)).toBe(slots[0]);
    expect(choosePkcs11Slot([slots[0]], 0)).toBe(slots[0]);
    expect(choosePkcs11Slot(slots, 0)).toEqual({
      problem: "failed to find slot with label 0 (plugin.security.pkcs11.slot): the module's slots with a token are 1434613542, 1",
    });
    expect(choosePkcs11Slot([], 0)).toEqual({
      problem: "failed to find slot with label 0 (plugin.security.pkcs11.slot): the module's slots with a token are none",
    });
  });

  it('wants exactly one private key and one certificate on the token', () => {
    expect(singleObjectProblem('private key', 1)).toBeUndefined();
    expect(singleObjectProblem('certificate', 0)).toBe('failed to find certificate object: no objects found');
    expect(singleObjectProblem('private key', 2)).toBe(
      'failed to find private key object: too many objects matching template (2 on the token; go-choria takes the only one)',
    );
  });

  it('CKM_RSA_PKCS over the SHA-256 DigestInfo is the PKCS#1 v1.5 SHA-256 signature the file provider makes', () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const data = Buffer.from('{"agent":"choria_provision"}');
    const expected = sign('sha256', data, { key: privateKey, padding: constants.RSA_PKCS1_PADDING });
    // CKM_RSA_PKCS is the raw PKCS#1 type 1 private operation, as privateEncrypt is.
    const onToken = privateEncrypt(
      { key: privateKey, padding: constants.RSA_PKCS1_PADDING },
      sha256DigestInfo(createHash('sha256').update(data).digest()),
    );
    expect(onToken).toEqual(expected);
    expect(() => sha256DigestInfo(Buffer.alloc(20))).toThrow('a SHA-256 hash is 32 bytes, not 20');
  });

  it('names the key for OpenSSL by token, serial and CKA_ID (else CKA_LABEL), percent-encoded, and never with a PIN', () => {
    expect(pkcs11KeyUri({ token: 'prov token', serial: '1c8dae21', id: Buffer.from([0x01, 0xab]), label: 'k' })).toBe(
      'pkcs11:token=prov%20token;serial=1c8dae21;id=%01%ab;type=private',
    );
    expect(pkcs11KeyUri({ token: 'a;b', serial: 's', id: Buffer.alloc(0), label: 'choria key' })).toBe(
      'pkcs11:token=a%3bb;serial=s;object=choria%20key;type=private',
    );
    expect(() => pkcs11KeyUri({ token: 't', serial: 's', id: Buffer.alloc(0), label: '' })).toThrow('neither CKA_ID nor CKA_LABEL');
  });
});
