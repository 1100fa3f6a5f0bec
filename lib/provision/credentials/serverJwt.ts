import { KeyObject, createPrivateKey } from 'node:crypto';
import { SiteFiles } from '../../siteFiles';
import { SignJWT, decodeJwt } from 'jose';
import { HexDecodeError, decodeHex, ed25519PrivateKeyFromSeed, ed25519Sign, ED25519_SEED_SIZE } from '../../choria/ed25519Keys';
import { formatGoDuration } from '../../choria/duration';
import { newKsuid } from '../../choria/ksuid';
import { Logger, silentLogger } from '../../logger';
import { definedFields } from '../../definedFields';

/** Extra abilities a server JWT grants (`tokens.ServerPermissions`). */
export interface ServerPermissions {
  submission?: boolean;
  streams?: boolean;
  governor?: boolean;
  service_host?: boolean;
}

/** The parts of the helper's `server_claims` upstream uses; every other claim is ignored. */
export interface ServerClaimsOverrides {
  /** Organisation unit; default `choria`. */
  ou?: string;
  /** Absolute expiry, Unix seconds (not a validity: upstream's docs example of 5 years in seconds lands in 1974). */
  exp?: number;
  collectives?: string[];
  pub_subjects?: string[];
  permissions?: ServerPermissions;
}

/** The claims of a server JWT, in the order `tokens.ServerClaims` marshals them. */
export interface ServerClaims {
  identity: string;
  collectives: string[];
  permissions?: ServerPermissions;
  ou: string;
  pub_subjects?: string[];
  purpose: 'choria_server';
  tcs?: string;
  public_key: string;
  issexp?: number;
  iss: string;
  exp: number;
  nbf: number;
  iat: number;
  jti: string;
}

/** Why a server JWT could not be made; the messages are upstream's where it has one. */
export class ServerJwtError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerJwtError';
  }
}

/** What {@link buildServerClaims} and {@link signServerJwt} need. */
export interface ServerJwtRequest {
  identity: string;
  /** The node's ed25519 public key, hex, from `gen25519`. */
  ed25519PublicKey: string;
  /** The configuration the helper returned (its `collectives` and `plugin.security.provider` matter). */
  configuration: Record<string, string>;
  /** The helper's `server_claims`, if any. */
  serverClaims?: ServerClaimsOverrides | null;
  /** `server_jwt_validity` in milliseconds. */
  defaultValidityMs: number;
  /** The clock, milliseconds; default `Date.now`. */
  now?: () => number;
  logger?: Logger;
}

/** {@link ServerJwtRequest} plus the signing material from the configuration. */
export interface SignServerJwtRequest extends ServerJwtRequest {
  /** `jwt_signing_key`: a PEM RSA private key (RS256) or exactly 64 hex characters of ed25519 seed (EdDSA). */
  jwtSigningKey: string;
  /** `jwt_signing_token`: the provisioner's chain-issuer client JWT; empty for none. */
  jwtSigningToken?: string;
  /** Where both are read from, afresh on every call. */
  files: SiteFiles;
}

const HOUR_MS = 3_600_000;
const ISSUER = 'Choria Provisioner';

/**
 * The server JWT's claims, as upstream's `generateServerJWT` builds them before chaining:
 * - collectives: `mcollective`, or `choria` when the helper's configuration sets
 *   `plugin.security.provider = choria`, or the helper's `collectives` setting split on commas
 *   (trimmed, empties dropped), or `server_claims.collectives` when non-empty;
 * - `ou` from `server_claims.ou`, else `choria`; `pub_subjects` and `permissions` when given;
 * - validity: until `server_claims.exp` when set, else `server_jwt_validity`; a validity of one hour
 *   or less (an `exp` in the past included) is logged and replaced by `server_jwt_validity`;
 * - `iss` `Choria Provisioner`, `purpose` `choria_server`, `public_key` the node's key, a KSUID
 *   `jti` made from the same second as `iat` = `nbf`.
 *
 * Throws {@link ServerJwtError}: `no ed25519 public key set`, `no default validity configured`,
 * `identity is required`, or a hex error for a malformed public key.
 */
export function buildServerClaims(request: ServerJwtRequest): ServerClaims {
  const { identity, configuration, serverClaims, defaultValidityMs, now = Date.now, logger = silentLogger } = request;
  if (request.ed25519PublicKey === '') throw new ServerJwtError('no ed25519 public key set');
  if (defaultValidityMs <= 0) throw new ServerJwtError('no default validity configured');
  if (identity === '') throw new ServerJwtError('identity is required');
  try {
    decodeHex(request.ed25519PublicKey);
  } catch (error) {
    if (error instanceof HexDecodeError) throw new ServerJwtError(error.message);
    throw error;
  }

  const nowMs = now();
  let org = 'choria';
  let validityMs = defaultValidityMs;
  let collectives = ['mcollective'];
  if (configuration['plugin.security.provider'] === 'choria') collectives = ['choria'];
  if (configuration.collectives !== undefined) {
    const configured = configuration.collectives
      .split(',')
      .map((c) => c.trim())
      .filter((c) => c !== '');
    if (configured.length > 0) collectives = configured;
  }
  let pubSubjects: string[] | undefined;
  let permissions: ServerPermissions | undefined;
  if (serverClaims) {
    if (serverClaims.ou) org = serverClaims.ou;
    if (serverClaims.exp) validityMs = serverClaims.exp * 1000 - nowMs;
    if (serverClaims.collectives && serverClaims.collectives.length > 0) collectives = serverClaims.collectives;
    if (serverClaims.pub_subjects && serverClaims.pub_subjects.length > 0) pubSubjects = serverClaims.pub_subjects;
    if (serverClaims.permissions) permissions = serverClaims.permissions;
  }
  // An exp the helper gave is kept to the second (upstream's time.Until round trip lands one early).
  let absoluteExp = serverClaims?.exp ? Math.floor(serverClaims.exp) : undefined;
  if (validityMs <= HOUR_MS) {
    absoluteExp = undefined;
    logger.warn(
      { identity },
      `Server validity ${formatGoDuration(validityMs)} is too short, setting to default ${formatGoDuration(defaultValidityMs)}`,
    );
    validityMs = defaultValidityMs;
  }

  const iat = Math.floor(nowMs / 1000);
  const claims: ServerClaims = {
    identity,
    collectives,
    ...(permissions === undefined ? {} : { permissions: goPermissions(permissions) }),
    ou: org,
    ...definedFields({ pub_subjects: pubSubjects }),
    purpose: 'choria_server',
    public_key: request.ed25519PublicKey.toLowerCase(),
    iss: ISSUER,
    exp: absoluteExp ?? Math.floor((iat * 1000 + validityMs) / 1000),
    nbf: iat,
    iat,
    jti: newKsuid(iat * 1000),
  };
  return claims;
}

/**
 * Chains `claims` to the provisioner's chain-issuer token, as upstream's `AddChainIssuerData`:
 * `iss` becomes `C-<signer jti>.<signer public_key>`, `issexp` the signer's expiry, `exp` is capped at
 * it, and `tcs` is `<signer tcs>.<hex ed25519 signature of "<jti>.<signer tcs>">` made with the
 * signer's seed. Returns new claims; throws {@link ServerJwtError} (`no Trust Chain Signature claim
 * in JWT Signing Token`, `id not set`, `public key not set`, `issuer has no expiry`).
 */
export function addChainIssuerData(claims: ServerClaims, signingToken: string, signerSeed: KeyObject): ServerClaims {
  let signer: Record<string, unknown>;
  try {
    signer = decodeJwt(signingToken.trim());
  } catch (error) {
    throw new ServerJwtError(`could not parse the JWT signing token: ${(error as Error).message}`);
  }
  const tcs = typeof signer.tcs === 'string' ? signer.tcs : '';
  if (tcs === '') throw new ServerJwtError('no Trust Chain Signature claim in JWT Signing Token');
  if (typeof signer.jti !== 'string' || signer.jti === '') throw new ServerJwtError('id not set');
  if (typeof signer.public_key !== 'string' || signer.public_key === '') throw new ServerJwtError('public key not set');
  if (typeof signer.exp !== 'number') throw new ServerJwtError('issuer has no expiry');
  const issexp = Math.floor(signer.exp);
  const signature = ed25519Sign(signerSeed, Buffer.from(`${claims.jti}.${tcs}`)).toString('hex');
  // Rebuilt rather than spread so the keys keep tokens.ServerClaims' order.
  const { identity, collectives, permissions, ou, pub_subjects, purpose, public_key, exp, nbf, iat, jti } = claims;
  return {
    identity,
    collectives,
    ...definedFields({ permissions }),
    ou,
    ...definedFields({ pub_subjects }),
    purpose,
    tcs: `${tcs}.${signature}`,
    public_key,
    issexp,
    iss: `C-${signer.jti}.${signer.public_key}`,
    exp: Math.min(exp, issexp),
    nbf,
    iat,
    jti,
  };
}

/** A signing key read with upstream's exact file rules. */
export interface SigningKey {
  alg: 'RS256' | 'EdDSA';
  key: KeyObject;
}

/**
 * Reads `jwt_signing_key` as upstream's `SignTokenWithKeyFile`: a file starting
 * `-----BEGIN RSA PRIVATE KEY` or `-----BEGIN PRIVATE KEY` is an RSA key (PKCS#1 or PKCS#8) for
 * RS256; otherwise a file of exactly 64 bytes is a hex ed25519 seed for EdDSA (so a trailing
 * newline makes it unusable, as upstream); anything else is `unsupported key in <file>`.
 */
export function readSigningKey(file: string, files: SiteFiles): SigningKey {
  let data: Buffer;
  try {
    data = files.read(file);
  } catch (error) {
    throw new ServerJwtError(`could not read signing key: ${(error as Error).message}`);
  }
  const text = data.toString('utf8');
  if (text.startsWith('-----BEGIN RSA PRIVATE KEY') || text.startsWith('-----BEGIN PRIVATE KEY')) {
    let key: KeyObject;
    try {
      key = createPrivateKey(text);
    } catch (error) {
      throw new ServerJwtError(`could not parse signing key: ${(error as Error).message}`);
    }
    if (key.asymmetricKeyType !== 'rsa') throw new ServerJwtError('could not parse signing key: key is not a valid RSA private key');
    return { alg: 'RS256', key };
  }
  if (data.length === ED25519_SEED_SIZE * 2) {
    try {
      return { alg: 'EdDSA', key: ed25519PrivateKeyFromSeed(decodeHex(text)) };
    } catch (error) {
      throw new ServerJwtError(`invalid ed25519 seed file: ${(error as Error).message}`);
    }
  }
  throw new ServerJwtError(
    `unsupported key in ${file} (expected a PEM RSA private key or exactly 64 hex characters of ed25519 seed, found ${data.length} bytes)`,
  );
}

/**
 * Reads an ed25519 seed file as upstream's `Ed25519KeyPairFromSeedFile`: the whole file is hex
 * (whitespace included, so a trailing newline fails) of a 32-byte seed.
 */
export function readSeedFile(file: string, files: SiteFiles): KeyObject {
  let text: string;
  try {
    text = files.read(file).toString('utf8');
  } catch (error) {
    throw new ServerJwtError(`could not read seed file: ${(error as Error).message}`);
  }
  let seed: Buffer;
  try {
    seed = decodeHex(text);
  } catch (error) {
    throw new ServerJwtError((error as Error).message);
  }
  if (seed.length !== ED25519_SEED_SIZE) throw new ServerJwtError('invalid seed length');
  return ed25519PrivateKeyFromSeed(seed);
}

/**
 * Makes and signs a node's server JWT (features.ed25519), as upstream: {@link buildServerClaims};
 * then, when `jwt_signing_token` is set, {@link addChainIssuerData} with the seed in
 * `jwt_signing_key`; then signs with {@link readSigningKey} (RS256 or EdDSA). Both files are read
 * on every call so rotated secrets are picked up without a restart.
 *
 * Rejects with {@link ServerJwtError}; `no jwt signing key configured using jwt_signing_key` when
 * the key is not configured.
 */
export async function signServerJwt(request: SignServerJwtRequest): Promise<string> {
  if (request.ed25519PublicKey === '') throw new ServerJwtError('no ed25519 public key set');
  if (request.jwtSigningKey === '') throw new ServerJwtError('no jwt signing key configured using jwt_signing_key');
  let claims = buildServerClaims(request);
  if (request.jwtSigningToken !== undefined && request.jwtSigningToken !== '') {
    let token: string;
    try {
      token = request.files.read(request.jwtSigningToken).toString('utf8');
    } catch (error) {
      throw new ServerJwtError(`could not read jwt_signing_token: ${(error as Error).message}`);
    }
    claims = addChainIssuerData(claims, token, readSeedFile(request.jwtSigningKey, request.files));
  }
  const signing = readSigningKey(request.jwtSigningKey, request.files);
  return new SignJWT(claims as unknown as Record<string, unknown>).setProtectedHeader({ alg: signing.alg, typ: 'JWT' }).sign(signing.key);
}

function goPermissions(p: ServerPermissions): ServerPermissions {
  // omitempty on every field: only the granted ones appear.
  const out: ServerPermissions = {};
  if (p.submission) out.submission = true;
  if (p.streams) out.streams = true;
  if (p.governor) out.governor = true;
  if (p.service_host) out.service_host = true;
  return out;
}
