/**
 * What proves who is who on an https Incus endpoint: the client certificate and key, and the pin
 * of the server's certificate, read from their files (or given as PEM text), checked, and read
 * again at the next connection once a file has changed. A site renews these certificates on disk
 * (`incus config trust` for a new client certificate, a renewed server certificate pinned by its
 * file); read once, the enricher would be refused at every reconnection until someone restarted it.
 */
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { SecureContext, createSecureContext } from 'node:tls';

/** A configuration that cannot work: a bad URL, an unreadable or invalid certificate, no pin. */
export class IncusEndpointError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IncusEndpointError';
  }
}

/** What a connection is made with. */
export interface TlsCredentials {
  /** The server certificate's SHA-256 fingerprint, as {@link certificateFingerprint} writes it. */
  readonly pin: string;
  readonly context: SecureContext;
}

/** The options the credentials come from: each PEM as a file path or as the PEM text. */
export interface TlsCredentialOptions {
  readonly clientCert: string;
  readonly clientKey: string;
  readonly serverCert?: string;
  readonly serverFingerprint?: string;
}

/** A fingerprint in the one form we compare: 64 lowercase hex digits. */
export function normaliseFingerprint(fingerprint: string): string {
  const hex = fingerprint.replace(/[:\s]/g, '').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex))
    throw new IncusEndpointError('serverFingerprint must be a SHA-256 fingerprint: 64 hex digits, colons allowed');
  return hex;
}

/** The SHA-256 fingerprint of a DER certificate, as {@link normaliseFingerprint} writes it. */
export function certificateFingerprint(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex');
}

const isPem = (value: string): boolean => value.includes('-----BEGIN');

// Either the PEM text itself or a path to it. What reaches an error message is the option's name
// and, for a path, the path: never the content, which for the key is a secret.
function pemOption(what: string, value: string): string {
  if (isPem(value)) return value;
  try {
    return readFileSync(value, 'utf8');
  } catch (error) {
    throw new IncusEndpointError(`cannot read ${what} from ${value}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}`, {
      cause: error,
    });
  }
}

function parseCertificate(what: string, pem: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (error) {
    throw new IncusEndpointError(`${what} is not a PEM certificate`, { cause: error });
  }
}

function load(options: TlsCredentialOptions): TlsCredentials {
  const { clientCert, clientKey, serverCert, serverFingerprint } = options;
  let pin = serverFingerprint === undefined ? undefined : normaliseFingerprint(serverFingerprint);
  if (serverCert !== undefined) {
    const fromCert = certificateFingerprint(parseCertificate('serverCert', pemOption('serverCert', serverCert)).raw);
    if (pin !== undefined && pin !== fromCert) throw new IncusEndpointError('serverCert and serverFingerprint name different certificates');
    pin = fromCert;
  }
  const certPem = pemOption('clientCert', clientCert);
  const keyPem = pemOption('clientKey', clientKey);
  const certificate = parseCertificate('clientCert', certPem);
  let key;
  try {
    key = createPrivateKey(keyPem);
  } catch (error) {
    throw new IncusEndpointError('clientKey is not a PEM private key', { cause: error });
  }
  if (!certificate.checkPrivateKey(key)) throw new IncusEndpointError('clientKey is not the key of clientCert');
  return { pin: pin as string, context: createSecureContext({ cert: certPem, key: keyPem }) };
}

// A file's identity and version: a renewal that replaces the file (a new inode) or rewrites it
// (a new size or time) is seen; a missing file reads as a change, so the next load says why.
function stamp(paths: readonly string[]): string {
  return paths
    .map((path) => {
      try {
        const s = statSync(path);
        return `${s.ino}:${s.size}:${s.mtimeMs}`;
      } catch {
        return 'missing';
      }
    })
    .join('|');
}

/**
 * Reads and checks the credentials now, throwing an {@link IncusEndpointError} for any problem (a
 * missing or unreadable file, a certificate that does not parse, a key that is not the
 * certificate's, two pins that disagree), and returns what each new connection calls: the same
 * credentials while no file has changed (one `stat` per file), else the files read and checked
 * again. A change that does not check out throws there, for that connection only; the next
 * connection reads the files again, so a renewal caught half written is picked up once complete.
 */
export function tlsCredentials(options: TlsCredentialOptions): () => TlsCredentials {
  const paths = [options.clientCert, options.clientKey, options.serverCert].filter(
    (value): value is string => value !== undefined && !isPem(value),
  );
  let seen = stamp(paths);
  let current = load(options);
  return () => {
    const now = stamp(paths);
    if (now === seen) return current;
    current = load(options);
    seen = now;
    return current;
  };
}
