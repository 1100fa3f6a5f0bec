import { X509Certificate, createHash } from 'node:crypto';
import { jwtClaims } from './jwtClaims';
import { definedFields } from './definedFields';

/** What kind of file a credential is, so it can be described without quoting it. */
export type CredentialFormat = 'certificate' | 'token' | 'creds' | 'secret';

/** A credential described without its secret: a fingerprint and, when it has one, its expiry. */
export interface CredentialInfo {
  /** SHA-256 of the certificate's DER (colon hex, as `openssl x509 -fingerprint -sha256`), or the first 16 hex of the file's SHA-256. */
  fingerprint: string;
  /** When it stops being valid, ms since the epoch: the certificate's (the earliest of a bundle) or the token's `exp`. */
  expiresAt?: number;
  /** A certificate's subject, for the log. */
  subject?: string;
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;
const NATS_USER_JWT = /-----BEGIN NATS USER JWT-----\s*([^\s-]+)\s*------END NATS USER JWT------/;

function fileHash(text: Buffer): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

function tokenExpiry(token: string): number | undefined {
  try {
    const exp = jwtClaims(token.trim()).exp;
    return typeof exp === 'number' && exp > 0 ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Describes a credential file's content so a change can be logged and its expiry exported without
 * the secret: certificates (a PEM bundle: the first one's fingerprint, the earliest expiry), a
 * JWT (a hash of the file and its `exp`), a NATS `.creds` file (the user JWT's `exp`), or any
 * other secret (a hash only). Throws when a certificate file holds no parseable certificate.
 */
export function describeCredential(format: CredentialFormat, content: Buffer): CredentialInfo {
  if (format === 'certificate') {
    const pems = content.toString('utf8').match(PEM_CERT) ?? [];
    if (pems.length === 0) throw new Error('no PEM certificate in the file');
    const certs = pems.map((pem) => new X509Certificate(pem));
    const expiresAt = Math.min(...certs.map((c) => Date.parse(c.validTo)));
    return { fingerprint: certs[0].fingerprint256, expiresAt, subject: certs[0].subject.replace(/\n/g, ', ') };
  }
  const text = content.toString('utf8');
  const token = format === 'token' ? text : format === 'creds' ? NATS_USER_JWT.exec(text)?.[1] : undefined;
  const expiresAt = token !== undefined ? tokenExpiry(token) : undefined;
  return { fingerprint: fileHash(content), ...definedFields({ expiresAt }) };
}

/** `30s`, `5m`, `3h`, `14d`: a span in the largest whole unit, for log lines. */
export function roughSpan(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (s < 120) return `${s}s`;
  if (s < 7200) return `${Math.round(s / 60)}m`;
  if (s < 172_800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86_400)}d`;
}
