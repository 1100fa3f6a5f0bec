import { KeyObject, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { SignJWT } from 'jose';

/** An organisation issuer: the ed25519 key pair a site's client and server JWTs are signed with. */
export interface OrganisationIssuer {
  privateKey: KeyObject;
  publicKey: KeyObject;
}

/** A fresh organisation issuer. */
export function organisationIssuer(): OrganisationIssuer {
  return generateKeyPairSync('ed25519');
}

/** A client's JWT and the hex ed25519 seed of the key it names, as `choria jwt client` leaves them. */
export interface ClientCredentials {
  token: string;
  seedHex: string;
}

/**
 * A client JWT as `choria jwt client ... --server-provisioner` makes one for the provisioner:
 * purpose `choria_client_id`, the caller id, the client's public key, the `provisioner`
 * permission (unless `permissions` says otherwise), valid an hour (or until `expiresAt`), signed
 * EdDSA by the issuer.
 */
export async function clientCredentials(
  issuer: OrganisationIssuer,
  options: { callerId?: string; permissions?: Record<string, boolean>; expiresAt?: Date } = {},
): Promise<ClientCredentials> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  const token = await new SignJWT({
    purpose: 'choria_client_id',
    callerid: options.callerId ?? 'up=provisioner',
    public_key: raw.toString('hex'),
    ou: 'choria',
    permissions: options.permissions ?? { provisioner: true, streams_user: true, election_user: true },
  })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
    .setIssuer('I-spec')
    .setIssuedAt()
    .setExpirationTime(options.expiresAt ?? '1h')
    .sign(issuer.privateKey);
  return { token, seedHex: privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(-32).toString('hex') };
}

/** A temporary directory a suite writes a site's files into, removed by `remove()`. */
export interface SiteDir {
  readonly path: string;
  /** Writes `text` at `name` (parent directories made) and returns the full path. */
  file(name: string, text: string): string;
  remove(): void;
}

/** A fresh {@link SiteDir}. */
export function siteDir(prefix = 'rxfleet-site-'): SiteDir {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    file(name, text) {
      const full = join(path, name);
      mkdirSync(dirname(full), { recursive: true });
      writeFileSync(full, text);
      return full;
    },
    remove: () => rmSync(path, { recursive: true, force: true }),
  };
}
