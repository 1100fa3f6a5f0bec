import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPublicKey, generateKeyPairSync, sign, webcrypto } from 'node:crypto';
import { encodePem } from '../../choria/pem';
import { CsrReply } from '../credentials/csrValidation';
import { Ed25519Reply, newGen25519Nonce } from '../credentials/gen25519Reply';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };

/**
 * What a dry run gives the helper in place of what it may not ask a node for (DECISIONS P23):
 * `gencsr` and `gen25519` write a new key on the node, so the dry run makes its own, one of each
 * for the whole run, never sent anywhere. The helper sees requests shaped as a real cycle's; what
 * it signs is signed for a key no node holds.
 */
export interface StandIns {
  /** A CSR for `identity` (CN only, as go-choria's `gencsr` makes it), for the pki flow. */
  csr(identity: string): Promise<CsrReply>;
  /** An ed25519 key and its signature of a nonce, as a `gen25519` reply, for the ed25519 flow. */
  ed25519(): Ed25519Reply;
}

/** Stand-in keys made on first use, one RSA and one ed25519 key per run. */
export function standInKeys(): StandIns {
  let rsa: Promise<webcrypto.CryptoKeyPair> | undefined;
  let ed: Ed25519Reply | undefined;
  return {
    async csr(identity) {
      rsa ??= webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify']) as Promise<webcrypto.CryptoKeyPair>;
      const keys = await rsa;
      const request = await x509.Pkcs10CertificateRequestGenerator.create({ name: [{ CN: [identity] }], keys, signingAlgorithm: RSA });
      const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey));
      const pkcs1 = createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({ format: 'der', type: 'pkcs1' });
      return { csr: request.toString('pem'), public_key: encodePem({ type: 'PUBLIC KEY', headers: {}, bytes: pkcs1 }), ssldir: '' };
    },
    ed25519() {
      if (ed !== undefined) return ed;
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      const nonce = newGen25519Nonce();
      ed = {
        public_key: publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex'),
        directory: '',
        signature: sign(null, Buffer.from(nonce), privateKey).toString('hex'),
      };
      return ed;
    },
  };
}

/** What a certificate says: whom it names, who signed it, from when to when. */
export interface CertificateSummary {
  readonly subject: string;
  readonly issuer: string;
  readonly notBefore: string;
  readonly notAfter: string;
  /** Whole days from `notBefore` to `notAfter`. */
  readonly validDays: number;
  /** DNS names of its subject alternative names. */
  readonly dnsNames: readonly string[];
}

/** The first certificate of a PEM bundle, summarised; throws when there is none that parses. */
export function summariseCertificate(pem: string): CertificateSummary {
  const certificate = new x509.X509Certificate(pem);
  const san = certificate.getExtension(x509.SubjectAlternativeNameExtension);
  return {
    subject: certificate.subject,
    issuer: certificate.issuer,
    notBefore: certificate.notBefore.toISOString(),
    notAfter: certificate.notAfter.toISOString(),
    validDays: Math.floor((certificate.notAfter.getTime() - certificate.notBefore.getTime()) / 86_400_000),
    dnsNames: san?.names.items.filter((n) => n.type === 'dns').map((n) => n.value) ?? [],
  };
}
