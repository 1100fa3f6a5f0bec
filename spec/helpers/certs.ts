import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createHash, webcrypto } from 'node:crypto';

/** A certificate, its private key (both PEM) and its SHA-256 fingerprint (64 lowercase hex digits). */
export interface TestCertificate {
  cert: string;
  key: string;
  fingerprint: string;
}

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

/**
 * A fresh self-signed ECDSA P-256 certificate for a TLS server or client in a spec, valid for a
 * day, with `dnsNames` and `ipAddresses` as subject alternative names.
 */
export async function selfSignedCertificate(commonName: string, san: { dns?: string[]; ip?: string[] } = {}): Promise<TestCertificate> {
  const keys = (await webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const names = [
    ...(san.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(san.ip ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const certificate = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: Date.now().toString(16),
      name: `CN=${commonName}`,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
      signingAlgorithm: ALGORITHM,
      keys: keys as never,
      extensions: names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : [],
    },
    webcrypto as never,
  );
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const key = `-----BEGIN PRIVATE KEY-----\n${pkcs8
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
  return {
    cert: certificate.toString('pem'),
    key,
    fingerprint: createHash('sha256').update(Buffer.from(certificate.rawData)).digest('hex'),
  };
}
