import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { SignJWT } from 'jose';
import { KeyObject, createPrivateKey, createPublicKey, generateKeyPairSync, sign, webcrypto } from 'node:crypto';
import { newKsuid } from '../choria/ksuid';
import { encodePem } from '../choria/pem';
import { rawEd25519PublicKey } from '../choria/ed25519Keys';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** The algorithm of the key that signs the fleet's provisioning JWT. */
export type JwtKeyType = 'ed25519' | 'rsa';

/** What the provisioning JWT says (`tokens.ProvisioningClaims`, §3.5). */
export interface ProvisioningClaimsInput {
  /** `cht`: the token nodes expect from the provisioner. */
  token: string;
  /** `chu`: broker URLs, comma-joined. */
  urls?: string[];
  /** `chs`: whether provisioning requests must be signed. Default false, as `choria jwt prov` makes it. */
  secure?: boolean;
  /** `update`: whether `release_update` is allowed. */
  allowUpdates?: boolean;
  /** `v2`: whether the fleet speaks protocol v2. */
  v2?: boolean;
  /** `iss`. Default `Choria Tokens Package`, as `choria jwt prov` writes it. */
  issuer?: string;
}

/** Options for {@link createFleetKeys}. */
export interface FleetKeysOptions {
  claims: ProvisioningClaimsInput;
  /** Generate a signing key of this type when none is given. Default `ed25519`. */
  jwtKeyType?: JwtKeyType;
  /** The key signing the provisioning JWT: a KeyObject, a PEM private key (ed25519 or RSA), or a 64-hex ed25519 seed. */
  jwtSigningKey?: KeyObject | string;
  /**
   * Generate a new RSA key for every `gencsr` and a new ed25519 key for every `gen25519`, as a real
   * server does. Default false: one of each, shared by every node (RSA-2048 generation costs
   * ~100 ms, too slow for tens of thousands of nodes; the CSRs still carry each node's own CN).
   */
  perNodeKeys?: boolean;
}

/** An ed25519 key a node holds after `gen25519`. */
export interface NodeEd25519Key {
  publicKeyHex: string;
  /** Hex ed25519 signature of `data`'s UTF-8 bytes. */
  signHex(data: string): string;
}

/** Key material of a simulated fleet. */
export interface FleetKeys {
  /** The provisioning JWT every node returns from `jwt` (all nodes of a fleet share one, as they share the file). */
  readonly jwt: string;
  /** The claims inside it. */
  readonly claims: Record<string, unknown>;
  readonly jwtKeyType: JwtKeyType;
  /** What a provisioner's `jwt_verify_cert` must hold: hex of the ed25519 public key, or the RSA public key as PEM. */
  readonly jwtVerifyKey: string;
  /** A real CSR for `cn` (RSA-2048, SHA-256) and the public key as go-choria returns it (PKCS#1 DER labelled `PUBLIC KEY`). */
  csr(cn: string): Promise<{ csr: string; publicKey: string }>;
  /** The ed25519 key a node creates on `gen25519`. */
  ed25519(): NodeEd25519Key;
}

const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

function signingKeyFrom(given: KeyObject | string | undefined, type: JwtKeyType): KeyObject {
  if (given instanceof KeyObject) return given;
  if (given !== undefined) {
    const text = given.trim();
    if (/^[0-9a-fA-F]{64}$/.test(text))
      return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, Buffer.from(text, 'hex')]), format: 'der', type: 'pkcs8' });
    return createPrivateKey(text);
  }
  return type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey : generateKeyPairSync('ed25519').privateKey;
}

function ed25519Key(): NodeEd25519Key {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    publicKeyHex: rawEd25519PublicKey(publicKey).toString('hex'),
    signHex: (data) => sign(null, Buffer.from(data, 'utf8'), privateKey).toString('hex'),
  };
}

const RSA_CSR_ALGORITHM = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };

async function rsaKeys(): Promise<webcrypto.CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(RSA_CSR_ALGORITHM, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

/** Creates a fleet's keys and signs its provisioning JWT (EdDSA for ed25519, RS256 for RSA). */
export async function createFleetKeys(options: FleetKeysOptions): Promise<FleetKeys> {
  const signingKey = signingKeyFrom(options.jwtSigningKey, options.jwtKeyType ?? 'ed25519');
  const keyType = signingKey.asymmetricKeyType;
  if (keyType !== 'ed25519' && keyType !== 'rsa') throw new Error(`the JWT signing key must be ed25519 or RSA, not ${keyType}`);
  const publicKey = createPublicKey(signingKey);
  const jwtVerifyKey =
    keyType === 'ed25519' ? rawEd25519PublicKey(publicKey).toString('hex') : publicKey.export({ format: 'pem', type: 'spki' }).toString();

  const { claims: input } = options;
  const now = Math.floor(Date.now() / 1000);
  // In the order choria-io/tokens' ProvisioningClaims marshals them (`choria jwt prov`'s JWT).
  const claims: Record<string, unknown> = {
    cht: input.token,
    chs: input.secure ?? false,
    ...(input.urls !== undefined && input.urls.length > 0 ? { chu: input.urls.join(',') } : {}),
    chpd: true,
    extensions: null,
    ou: 'choria',
    ...(input.v2 === true ? { v2: true } : {}),
    ...(input.allowUpdates === true ? { update: true } : {}),
    purpose: 'choria_provisioning',
    iss: input.issuer ?? 'Choria Tokens Package',
    sub: 'choria_provisioning',
    exp: now + 365 * 24 * 3600,
    nbf: now,
    iat: now,
    jti: newKsuid(now * 1000),
  };
  const jwt = await new SignJWT(claims).setProtectedHeader({ alg: keyType === 'ed25519' ? 'EdDSA' : 'RS256', typ: 'JWT' }).sign(signingKey);

  const perNode = options.perNodeKeys === true;
  let sharedRsa: Promise<webcrypto.CryptoKeyPair> | undefined;
  const sharedEd25519 = perNode ? undefined : ed25519Key();

  return {
    jwt,
    claims,
    jwtKeyType: keyType,
    jwtVerifyKey,
    async csr(cn) {
      const keys = perNode ? await rsaKeys() : await (sharedRsa ??= rsaKeys());
      const request = await x509.Pkcs10CertificateRequestGenerator.create({
        name: [{ CN: [cn] }],
        keys,
        signingAlgorithm: RSA_CSR_ALGORITHM,
      });
      const spki = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey));
      const pkcs1 = createPublicKey({ key: spki, format: 'der', type: 'spki' }).export({ format: 'der', type: 'pkcs1' });
      // PEM as Go's pem.Encode writes it, ending in a newline.
      return { csr: `${request.toString('pem')}\n`, publicKey: encodePem({ type: 'PUBLIC KEY', headers: {}, bytes: pkcs1 }) };
    },
    ed25519: () => sharedEd25519 ?? ed25519Key(),
  };
}
