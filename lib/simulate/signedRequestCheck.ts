import { X509Certificate, constants, verify } from 'node:crypto';
import { decodeBase64Strict } from '../choria/protocol/encoding';
import { INSECURE } from '../choria/protocol/v1';
import { ChoriaRequest } from '../choria/protocol/types';

/** go-choria's defaults for which certificate names may make requests, and which are privileged. */
export const DEFAULT_CERTNAME_ALLOW_LIST = ['\\.mcollective$', '\\.choria$'];
export const DEFAULT_PRIVILEGED_USERS = ['\\.privileged.mcollective$', '\\.privileged.choria$'];

/** What a server that insists on signed requests checks them against. */
export interface SignedRequestPolicy {
  /** The CA certificate(s), PEM: a caller's certificate must chain to one. */
  caPem: string;
  /** `plugin.choria.security.certname_whitelist`; default {@link DEFAULT_CERTNAME_ALLOW_LIST}. */
  allowList?: string[];
  /** `plugin.choria.security.privileged_users`; default {@link DEFAULT_PRIVILEGED_USERS}. */
  privileged?: string[];
  /** The clock certificates' validity is checked against, ms. Default `Date.now`. */
  now?: () => number;
}

const CALLER_ID = /^[a-z]+=([\w.-]+)/;
const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';

/**
 * Why a server whose provisioning JWT says `chs: true` would drop this request, or `undefined` when
 * it accepts it: go-choria's v1 `SecureRequest.Valid` with the `file` provider. The caller's name
 * is taken from the caller id (`choria=<certname>`); the certificate in `pubcert` must chain to the
 * CA (intermediates may follow it in `pubcert`), be valid now and allowed for client
 * authentication; unless it carries a privileged name it must be issued to that name (a DNS name
 * or the common name), and the name must be on the allow list; and `signature` must be the RSA
 * PKCS#1 v1.5 SHA-256 signature of the request text by the certificate's key. Unsigned requests
 * (`insecure`) are refused. v2 requests are not judged here (provisioning v2 is never secure).
 */
export function signedRequestRefusal(request: ChoriaRequest, policy: SignedRequestPolicy): string | undefined {
  if (request.version !== 'v1') return undefined;
  const { signature, pubcert, signed } = request.security;
  if (signature === INSECURE || pubcert === undefined || pubcert === INSECURE || signed === undefined) return 'the request is not signed';
  const certname = CALLER_ID.exec(request.callerId)?.[1];
  if (certname === undefined) return `could not find a valid caller identity name in ${request.callerId}`;

  let chain: X509Certificate[];
  let roots: X509Certificate[];
  try {
    chain = pemCertificates(pubcert).map((pem) => new X509Certificate(pem));
    roots = pemCertificates(policy.caPem).map((pem) => new X509Certificate(pem));
  } catch (error) {
    return `could not parse certificate: ${(error as Error).message}`;
  }
  const leaf = chain[0];
  if (leaf === undefined) return 'no certificate in pubcert';
  const chainProblem = verifyChain(leaf, chain.slice(1), roots, (policy.now ?? Date.now)());
  if (chainProblem !== undefined) return `certificate ${certname} did not pass verification: ${chainProblem}`;

  const names = [commonName(leaf), ...dnsNames(leaf)].filter((n): n is string => n !== undefined);
  const privileged = names.some((name) => matchesAny(name, policy.privileged ?? DEFAULT_PRIVILEGED_USERS));
  if (!privileged) {
    if (!names.includes(certname)) return `x509: certificate is valid for ${commonName(leaf) ?? ''}, not ${certname}`;
    if (!matchesAny(certname, policy.allowList ?? DEFAULT_CERTNAME_ALLOW_LIST))
      return `certificate ${certname} does not match the allowed list`;
  }

  const bytes = decodeBase64Strict(signature);
  if (bytes === undefined) return 'could not base64 decode the signature';
  const good = verify('sha256', Buffer.from(signed, 'utf8'), { key: leaf.publicKey, padding: constants.RSA_PKCS1_PADDING }, bytes);
  return good ? undefined : 'signature in request did not pass validation with embedded public certificate';
}

function pemCertificates(text: string): string[] {
  return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

function verifyChain(leaf: X509Certificate, intermediates: X509Certificate[], roots: X509Certificate[], now: number): string | undefined {
  const usages = leaf.keyUsage;
  if (usages !== undefined && usages.length > 0 && !usages.includes(CLIENT_AUTH) && !usages.includes(ANY_EKU))
    return 'certificate specifies an incompatible key usage';
  let current = leaf;
  for (let depth = 0; depth < 8; depth++) {
    if (now < Date.parse(current.validFrom) || now > Date.parse(current.validTo))
      return `certificate has expired or is not yet valid (${current.validFrom} to ${current.validTo})`;
    const root = roots.find((ca) => current.checkIssued(ca) && current.verify(ca.publicKey));
    if (root !== undefined) return undefined;
    const next = intermediates.find((ca) => ca !== current && ca.ca && current.checkIssued(ca) && current.verify(ca.publicKey));
    if (next === undefined) return 'certificate signed by unknown authority';
    current = next;
  }
  return 'certificate chain too long';
}

function commonName(cert: X509Certificate): string | undefined {
  return /^CN=(.*)$/m.exec(cert.subject)?.[1];
}

function dnsNames(cert: X509Certificate): string[] {
  return (cert.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice(4));
}

/** go-choria's `MatchAnyRegex`: a pattern written `/re/` loses its slashes; one that does not compile matches nothing. */
function matchesAny(name: string, patterns: string[]): boolean {
  return patterns.some((pattern) => {
    const source = /^\/.+\/$/.test(pattern) ? pattern.slice(1, -1) : pattern;
    try {
      return new RegExp(source).test(name);
    } catch {
      return false;
    }
  });
}
