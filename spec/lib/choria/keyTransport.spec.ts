import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import {
  KeyTransportError,
  decryptPemBlock,
  decryptPrivateKey,
  encryptPemBlock,
  encryptPrivateKey,
  evpBytesToKey,
  generateX25519KeyPair,
  x25519PublicKey,
  x25519SharedSecret,
} from '../../../lib/choria/keyTransport';
import { decodePem } from '../../../lib/choria/pem';

// RFC 7748 §6.1: Alice and Bob.
const alicePrivate = '77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a';
const alicePublic = '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a';
const bobPrivate = '5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb';
const bobPublic = 'de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f';
const rfcShared = '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742';

// A small RSA key is enough to carry bytes through the transport; made once for the suite.
const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 });
const helperKeyPem = rsa.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
const helperKeyDer = rsa.privateKey.export({ type: 'pkcs1', format: 'der' });

describe('private key transport (§3.8)', () => {
  it('computes X25519 public keys and shared secrets as RFC 7748 says', () => {
    expect(x25519PublicKey(alicePrivate).toString('hex')).toBe(alicePublic);
    expect(x25519PublicKey(Buffer.from(bobPrivate, 'hex')).toString('hex')).toBe(bobPublic);
    expect(x25519SharedSecret(alicePrivate, bobPublic).toString('hex')).toBe(rfcShared);
    expect(x25519SharedSecret(bobPrivate, alicePublic).toString('hex')).toBe(rfcShared);
  });

  it('derives the AES key as OpenSSL EVP_BytesToKey (MD5, one round) does', () => {
    // `openssl enc -aes-256-cbc -pass pass:secret -S 0001020304050607 -P -md md5`
    expect(evpBytesToKey(Buffer.from('secret'), Buffer.from('0001020304050607', 'hex')).toString('hex').toUpperCase()).toBe(
      '035FB8145B73CF111570DC936112BE9C375A5D3D8B915BC213BDBEF9DBFB7851',
    );
  });

  it('with fixed server keys, what the provisioner encrypts the server decrypts to the original PKCS#1 bytes', () => {
    // The server is Alice (its jwt reply carried alicePublic); the provisioner's ephemeral pair is Bob's.
    const sent = encryptPrivateKey(helperKeyPem, alicePublic, {
      privateKey: Buffer.from(bobPrivate, 'hex'),
      publicKey: Buffer.from(bobPublic, 'hex'),
    });
    expect(sent.ecdhPublic).toBe(bobPublic);
    const block = decodePem(sent.key);
    expect(block?.type).toBe('RSA PRIVATE KEY');
    expect(block?.headers['Proc-Type']).toBe('4,ENCRYPTED');
    expect(block?.headers['DEK-Info']).toMatch(/^AES-256-CBC,[0-9a-f]{32}$/);
    expect(sent.key).not.toContain(helperKeyDer.toString('base64').slice(0, 40));
    const received = decryptPrivateKey(sent.key, sent.ecdhPublic, Buffer.from(alicePrivate, 'hex'));
    expect(decodePem(received)?.bytes.equals(helperKeyDer)).toBe(true);
    expect(received).toBe(helperKeyPem);
  });

  it('round-trips with fresh keys on both sides', () => {
    const server = generateX25519KeyPair();
    const sent = encryptPrivateKey(helperKeyPem, server.publicKey.toString('hex'));
    expect(decryptPrivateKey(sent.key, sent.ecdhPublic, server.privateKey)).toBe(helperKeyPem);
  });

  it('writes a PEM that OpenSSL itself decrypts with the shared secret', () => {
    const server = generateX25519KeyPair();
    const ephemeral = generateX25519KeyPair();
    const sent = encryptPrivateKey(helperKeyPem, server.publicKey.toString('hex'), ephemeral);
    const secret = x25519SharedSecret(server.privateKey, ephemeral.publicKey);
    const opened = createPrivateKey({ key: sent.key, format: 'pem', passphrase: secret });
    expect(opened.export({ type: 'pkcs1', format: 'der' }).equals(helperKeyDer)).toBe(true);
  });

  it('reads a PEM that OpenSSL encrypted', () => {
    const secret = x25519SharedSecret(alicePrivate, bobPublic);
    const byOpenSsl = rsa.privateKey.export({ type: 'pkcs1', format: 'pem', cipher: 'aes-256-cbc', passphrase: secret }).toString();
    expect(byOpenSsl).toContain('DEK-Info: AES-256-CBC,');
    expect(decryptPemBlock(byOpenSsl, secret).bytes.equals(helperKeyDer)).toBe(true);
  });

  it('encrypts deterministically for a fixed IV and password (a vector for other implementations)', () => {
    const iv = Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex');
    const a = encryptPemBlock('RSA PRIVATE KEY', Buffer.from('hello'), Buffer.from('secret'), iv);
    expect(a).toBe(encryptPemBlock('RSA PRIVATE KEY', Buffer.from('hello'), Buffer.from('secret'), iv));
    expect(a.split('\n').slice(0, 4)).toEqual([
      '-----BEGIN RSA PRIVATE KEY-----',
      'Proc-Type: 4,ENCRYPTED',
      'DEK-Info: AES-256-CBC,000102030405060708090a0b0c0d0e0f',
      '',
    ]);
    expect(decryptPemBlock(a, Buffer.from('secret')).bytes.toString()).toBe('hello');
  });

  it("refuses what Go refuses, with Go's messages and no key material", () => {
    const server = generateX25519KeyPair();
    expect(() => encryptPrivateKey(helperKeyPem, '')).toThrow(
      'private key received from helper but server did not start Diffie-Hellman exchange',
    );
    expect(() => encryptPrivateKey('not a pem', server.publicKey.toString('hex'))).toThrow('bad key received');
    expect(() => encryptPrivateKey(helperKeyPem, 'abcd')).toThrow(KeyTransportError);
    expect(() => decryptPrivateKey(helperKeyPem, bobPublic, server.privateKey)).toThrow('key is not encrypted');
    expect(() => decryptPrivateKey('x', '', server.privateKey)).toThrow('no ECDH Public Key');
    const iv = Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex');
    // Fixed plaintext, IV and passwords: with random bytes a wrong password gives valid padding 1 time in ~256.
    const sealed = encryptPemBlock('RSA PRIVATE KEY', Buffer.from('a fixed plaintext of some length'), Buffer.from('right'), iv);
    let failure: unknown;
    try {
      decryptPemBlock(sealed, Buffer.from('wrong'));
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(KeyTransportError);
    expect((failure as Error).message).toBe('x509: decryption password incorrect');
  });
});
