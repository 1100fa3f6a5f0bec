import { join } from 'node:path/posix';

/** The files go-choria's `certmanager` provider keeps in `plugin.choria.ssldir`. */
export interface CertManagerFiles {
  /** `cert.pem`: the certificate cert-manager issued (the CertificateRequest's `status.certificate`). */
  certificate: string;
  /** `key.pem`: the RSA key the provider made (PKCS#1), which never left the directory. */
  key: string;
  /** `ca.pem`: the issuer's CA (the CertificateRequest's `status.ca`). */
  ca: string;
  /** `csr.pem`: the request that was sent; not needed once the certificate is there. */
  csr: string;
}

/** The layout go-choria's `certmanager` provider reads and writes in its SSL directory. */
export function certManagerFiles(sslDir: string): CertManagerFiles {
  return {
    certificate: join(sslDir, 'cert.pem'),
    key: join(sslDir, 'key.pem'),
    ca: join(sslDir, 'ca.pem'),
    csr: join(sslDir, 'csr.pem'),
  };
}

/** What {@link certManagerSecurity} is given: the two settings, the certname override, and how files are checked. */
export interface CertManagerInput {
  /** `plugin.choria.ssldir`. */
  sslDir: string | undefined;
  /** `identity`. */
  identity: string;
  /** `$MCOLLECTIVE_CERTNAME`. */
  certnameOverride: string | undefined;
  exists(path: string): boolean;
}

/** The provider's certname and files, or why it cannot start. */
export interface CertManagerSecurity {
  certname: string;
  files: CertManagerFiles | undefined;
  errors: string[];
}

/**
 * go-choria's `certmanager` provider, read as it reads its files (`providers/security/certmanager`):
 * `plugin.choria.ssldir` is required and must be a directory; the certname is
 * `$MCOLLECTIVE_CERTNAME`, else the `identity`; with `cert.pem`, `key.pem` and `ca.pem` all there
 * it is the `file` provider on those three files (TLS verified both ways, v1 requests signed with
 * `key.pem`, caller `choria=<certname>`) and asks Kubernetes nothing.
 *
 * When one is missing go-choria enrolls: it makes `key.pem` and `csr.pem`, posts a cert-manager
 * `CertificateRequest` to `https://kubernetes.default.svc` with the pod's service account token,
 * and writes `cert.pem` and `ca.pem` from its status. rxfleet does not talk to the Kubernetes API:
 * a missing file is an error naming it and how to get it (go-choria's own `choria enroll` with the
 * same configuration, once, in the pod; or the files written there by other means).
 */
export function certManagerSecurity(input: CertManagerInput): CertManagerSecurity {
  const certname = input.certnameOverride ?? input.identity;
  if (input.sslDir === undefined)
    return {
      certname,
      files: undefined,
      errors: [
        'plugin.choria.ssldir is required with plugin.security.provider = certmanager: the directory holding cert.pem, key.pem and ca.pem',
      ],
    };
  if (!input.exists(input.sslDir))
    return { certname, files: undefined, errors: [`${input.sslDir} does not exist or is not a directory (plugin.choria.ssldir)`] };
  const files = certManagerFiles(input.sslDir);
  const errors = (
    [
      [files.certificate, 'certificate'],
      [files.key, 'private key'],
      [files.ca, 'CA'],
    ] as const
  )
    .filter(([file]) => !input.exists(file))
    .map(
      ([file, what]) =>
        `the certmanager security provider needs the ${what} ${JSON.stringify(file)} (plugin.choria.ssldir ${input.sslDir}), which does not exist: go-choria would enroll with cert-manager through the Kubernetes API to make it, rxfleet does not (run "choria enroll" with this configuration once where the Kubernetes API is reachable, or write the file there)`,
    );
  return { certname, files, errors };
}
