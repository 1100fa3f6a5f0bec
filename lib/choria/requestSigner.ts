import { KeyObject, constants, createPrivateKey, sign } from 'node:crypto';
import { SiteFiles } from '../siteFiles';
import { V1Signer } from './protocol/v1';

/** A request that cannot be signed: the key is unreadable or not one go-choria signs with. */
export class RequestSigningError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RequestSigningError';
  }
}

/** The x509 material of a client: its certificate and private key files. */
export interface X509Files {
  certificate: string;
  key: string;
}

/**
 * Parses a private key as go-choria's `filesec.SignBytes` does (PKCS#1 `RSA PRIVATE KEY`, or PKCS#8
 * holding RSA) and refuses anything else with its message (`unhandled key type`). Never quotes the key.
 */
export function rsaSigningKey(pem: Buffer | string, file: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem, format: 'pem' });
  } catch (error) {
    throw new RequestSigningError(`could not parse private key PEM data in ${file}: ${(error as Error).message.split('\n')[0]}`);
  }
  if (key.asymmetricKeyType !== 'rsa')
    throw new RequestSigningError(
      `could not sign message string: unhandled key type ${key.asymmetricKeyType ?? 'unknown'} in ${file} (go-choria signs requests with RSA keys only)`,
    );
  return key;
}

/**
 * Signs v1 requests with a client's x509 key as go-choria's `file` and `puppet` providers do:
 * `signature` is RSA PKCS#1 v1.5 over the SHA-256 of the request JSON, `pubcert` the certificate
 * file as it is. Both files are read on every request, as go-choria reads them, so a renewed
 * certificate and key are used from the next request without a restart; a file that cannot be read
 * or a key go-choria could not sign with makes that request fail with {@link RequestSigningError}.
 */
export function x509RequestSigner(files: SiteFiles, x509: X509Files): V1Signer {
  return {
    pubcert: () => {
      try {
        return files.read(x509.certificate).toString('utf8');
      } catch (error) {
        throw new RequestSigningError(`could not retrieve Public Certificate from ${x509.certificate}: ${(error as Error).message}`);
      }
    },
    sign: (requestJson) => {
      let pem: Buffer;
      try {
        pem = files.read(x509.key);
      } catch (error) {
        throw new RequestSigningError(`could not read private key ${x509.key}: ${(error as Error).message}`);
      }
      return sign('sha256', requestJson, { key: rsaSigningKey(pem, x509.key), padding: constants.RSA_PKCS1_PADDING });
    },
  };
}

/**
 * Why requests could not be signed with these files, or `undefined` when they can: for a check at
 * start, so the problem is said once before any node is asked.
 */
export function x509SignerProblem(files: SiteFiles, x509: X509Files): string | undefined {
  try {
    const signer = x509RequestSigner(files, x509);
    signer.pubcert();
    signer.sign(Buffer.from('{}'));
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}
