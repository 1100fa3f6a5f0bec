import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { createPrivateKey, webcrypto } from 'node:crypto';

const RSA = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const DAY = 86_400_000;

/** A certificate and its private key, PEM. */
export interface IssuedCertificate {
  cert: string;
  key: string;
}

/** What a leaf certificate is for and named. */
export interface IssueOptions {
  dns?: string[];
  ip?: string[];
  /** Default `rsa` (the only kind go-choria signs requests with). */
  keyType?: 'rsa' | 'ec';
  /** The key as PKCS#1 `RSA PRIVATE KEY` (Puppet's layout) rather than PKCS#8. Default false. */
  pkcs1?: boolean;
  /** Default now - 1 min to now + 1 day. */
  notBefore?: Date;
  notAfter?: Date;
}

/** A private CA for one suite: it signs server and client certificates the way a site's CA would. */
export interface TestCa {
  readonly cert: string;
  readonly key: string;
  /** A leaf certificate for TLS servers and clients (both extended key usages), signed by this CA. */
  issue(commonName: string, options?: IssueOptions): Promise<IssuedCertificate>;
}

async function pemKey(key: webcrypto.CryptoKey, pkcs1: boolean): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  const object = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' });
  return pkcs1 ? (object.export({ format: 'pem', type: 'pkcs1' }) as string) : (object.export({ format: 'pem', type: 'pkcs8' }) as string);
}

let serial = Date.now();

/** Creates a CA (RSA 2048, valid a day) named `commonName`. */
export async function createTestCa(commonName = 'rxfleet test CA'): Promise<TestCa> {
  const caKeys = (await webcrypto.subtle.generateKey(RSA, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const caName = `CN=${commonName}`;
  const caCert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: (serial++).toString(16),
      name: caName,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + DAY),
      signingAlgorithm: RSA,
      keys: caKeys as never,
      extensions: [
        new x509.BasicConstraintsExtension(true, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      ],
    },
    webcrypto as never,
  );
  return {
    cert: caCert.toString('pem'),
    key: await pemKey(caKeys.privateKey, false),
    async issue(cn, options = {}) {
      const algorithm = options.keyType === 'ec' ? EC : RSA;
      const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
      const names = [
        ...(options.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
        ...(options.ip ?? []).map((value) => ({ type: 'ip' as const, value })),
      ];
      const cert = await x509.X509CertificateGenerator.create(
        {
          serialNumber: (serial++).toString(16),
          subject: `CN=${cn}`,
          issuer: caName,
          notBefore: options.notBefore ?? new Date(Date.now() - 60_000),
          notAfter: options.notAfter ?? new Date(Date.now() + DAY),
          signingAlgorithm: RSA,
          publicKey: keys.publicKey as never,
          signingKey: caKeys.privateKey as never,
          extensions: [
            new x509.BasicConstraintsExtension(false, undefined, true),
            new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
            new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
            ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
          ],
        },
        webcrypto as never,
      );
      return { cert: cert.toString('pem'), key: await pemKey(keys.privateKey, options.pkcs1 === true && options.keyType !== 'ec') };
    },
  };
}

/**
 * A client certificate for a key held elsewhere (a PKCS#11 token), issued by the CA in `ca`'s PEM
 * files as {@link TestCa.issue} issues one: only its public key is needed.
 */
export async function issueForPublicKey(
  ca: { cert: string; key: string },
  commonName: string,
  publicKey: webcrypto.JsonWebKey,
  options: Pick<IssueOptions, 'dns'> = {},
): Promise<string> {
  const caKeyDer = createPrivateKey(ca.key).export({ format: 'der', type: 'pkcs8' });
  const signingKey = await webcrypto.subtle.importKey('pkcs8', caKeyDer, RSA, false, ['sign']);
  const subjectKey = await webcrypto.subtle.importKey('jwk', publicKey, RSA, true, ['verify']);
  const issuer = new x509.X509Certificate(ca.cert).subject;
  const names = (options.dns ?? []).map((value) => ({ type: 'dns' as const, value }));
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: (serial++).toString(16),
      subject: `CN=${commonName}`,
      issuer,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + DAY),
      signingAlgorithm: RSA,
      publicKey: subjectKey as never,
      signingKey: signingKey as never,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
        ...(names.length > 0 ? [new x509.SubjectAlternativeNameExtension(names)] : []),
      ],
    },
    webcrypto as never,
  );
  return cert.toString('pem');
}
