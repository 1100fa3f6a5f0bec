import 'reflect-metadata';
import { Pkcs10CertificateRequest, SubjectAlternativeNameExtension } from '@peculiar/x509';
import { Logger, silentLogger } from '../../logger';
import { CertDenyList } from './certDenyList';
import { decodePem } from '../../choria/pem';

/** The `gencsr` reply the helper receives as `csr` (`provision.CSRReply`). */
export interface CsrReply {
  /** PEM `CERTIFICATE REQUEST`. */
  csr: string;
  /** PEM of the node's public key. */
  public_key: string;
  /** Where the node keeps its key; overrides the helper's `ssldir` in configure when non-empty. */
  ssldir: string;
}

/** A CSR the provisioner will not pass to the helper; the message is upstream's where it has one. */
export class CsrValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CsrValidationError';
  }
}

/** The names a valid CSR asks for. */
export interface CsrNames {
  commonName: string;
  dnsNames: string[];
}

const OID_SUBJECT_ALT_NAME = '2.5.29.17';

/**
 * Upstream's `validateCSR` (features.pki), without its panics (DECISIONS P12): the reply must carry
 * a CSR (`no CSR received`); its first PEM block must decode and parse as a PKCS#10 request
 * (`could not parse CSR: ...`, for malformed PEM too); its common name must equal `identity`
 * (`common name X does not match identity Y`); and neither the common name nor any DNS name may
 * match the deny list (`X matches denied certificate pattern`). The CSR signature is not checked,
 * as upstream. Throws {@link CsrValidationError}; returns the names otherwise.
 */
export function validateCsr(
  reply: CsrReply | null | undefined,
  identity: string,
  denyList: CertDenyList,
  logger: Logger = silentLogger,
): CsrNames {
  if (reply == null || typeof reply.csr !== 'string' || reply.csr === '') throw new CsrValidationError('no CSR received');
  const block = decodePem(reply.csr);
  if (block === undefined) throw new CsrValidationError('could not parse CSR: no PEM block found');
  let request: Pkcs10CertificateRequest;
  try {
    request = new Pkcs10CertificateRequest(block.bytes);
  } catch (error) {
    throw new CsrValidationError(
      `could not parse CSR: ${block.type === 'CERTIFICATE REQUEST' ? '' : `a ${block.type} PEM block, `}${(error as Error).message}`,
    );
  }
  // Go keeps the last CN when a subject has several.
  const commonName = request.subjectName.getField('CN').at(-1) ?? '';
  const dnsNames: string[] = [];
  for (const extension of request.extensions) {
    if (extension.type === OID_SUBJECT_ALT_NAME && extension instanceof SubjectAlternativeNameExtension) {
      dnsNames.push(...extension.names.items.filter((n) => n.type === 'dns').map((n) => n.value));
    }
  }
  if (commonName !== identity) throw new CsrValidationError(`common name ${commonName} does not match identity ${identity}`);
  for (const name of [commonName, ...dnsNames]) {
    if (denyList.match(name) !== undefined) {
      logger.error({ identity, name }, `Denying CSR with name ${name} due to pattern ${denyList.entries.join(', ')}`);
      throw new CsrValidationError(`${name} matches denied certificate pattern`);
    }
  }
  return { commonName, dnsNames };
}
