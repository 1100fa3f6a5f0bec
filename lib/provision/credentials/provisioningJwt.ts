import { KeyObject, X509Certificate, createPublicKey } from 'node:crypto';
import { SiteFiles } from '../../siteFiles';
import { decodeProtectedHeader, errors as joseErrors, jwtVerify } from 'jose';
import { HexDecodeError, decodeHex, ed25519PublicKeyFromRaw, ED25519_PUBLIC_KEY_SIZE } from '../../choria/ed25519Keys';

/**
 * A verified provisioning JWT's claims in the shape Choria's `tokens.ProvisioningClaims` marshals
 * to (and the helper receives as `jwt`): the same keys, in the same order, with the same
 * omit-when-empty rules; unknown claims dropped; `ou` defaulted to `choria`.
 */
export interface ProvisioningClaims {
  /** The provisioning token (the helper sees it, as upstream). */
  cht: string;
  chs: boolean;
  chu?: string;
  chsrv?: string;
  chpd: boolean;
  chrd?: string;
  chf?: string;
  chusr?: string;
  chpwd?: string;
  extensions: Record<string, unknown> | null;
  ou?: string;
  v2?: boolean;
  update?: boolean;
  purpose: string;
  tcs?: string;
  public_key?: string;
  issexp?: number;
  iss?: string;
  sub?: string;
  aud?: string[];
  exp?: number;
  nbf?: number;
  iat?: number;
  jti?: string;
}

/** A provisioning JWT that cannot be trusted, or a verification key that cannot be used. */
export class JwtValidationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JwtValidationError';
  }
}

/** A key provisioning JWTs are verified with: RSA (RS256/384/512) or ed25519 (EdDSA). */
export interface JwtVerificationKey {
  type: 'rsa' | 'ed25519';
  key: KeyObject;
}

const PROVISIONING_PURPOSE = 'choria_provisioning';
const RSA_ALGORITHMS = ['RS256', 'RS384', 'RS512'];

/**
 * Reads `jwt_verify_cert` the way upstream does: a value that is not an existing path is an inline
 * hex ed25519 public key; a file starting `-----BEGIN CERTIFICATE` or `-----BEGIN PUBLIC KEY` holds
 * an RSA public key (a certificate's key is used); any other file holds a hex ed25519 public key
 * (surrounding whitespace is tolerated here, where Go would refuse a trailing newline).
 *
 * Throws {@link JwtValidationError} with upstream's messages: `no JWT verification certificate
 * configured, cannot validate JWT`, `could not read validation certificate: ...`, `could not parse
 * validation certificate: ...`, `could not parse ed25519 public data: ...`, `invalid ed25519 public
 * key size`.
 */
export function readJwtVerificationKey(jwtVerifyCert: string, files: SiteFiles): JwtVerificationKey {
  if (jwtVerifyCert === '') throw new JwtValidationError('no JWT verification certificate configured, cannot validate JWT');
  if (!files.exists(jwtVerifyCert)) return ed25519Key(jwtVerifyCert);

  let data: string;
  try {
    data = files.read(jwtVerifyCert).toString('utf8');
  } catch (error) {
    throw new JwtValidationError(`could not read validation certificate: ${(error as Error).message}`);
  }
  if (data.startsWith('-----BEGIN CERTIFICATE') || data.startsWith('-----BEGIN PUBLIC KEY')) {
    let key: KeyObject;
    try {
      key = data.startsWith('-----BEGIN CERTIFICATE') ? new X509Certificate(data).publicKey : createPublicKey(data);
    } catch (error) {
      throw new JwtValidationError(`could not parse validation certificate: ${(error as Error).message}`);
    }
    if (key.asymmetricKeyType !== 'rsa')
      throw new JwtValidationError(
        `could not parse validation certificate: key is not a valid RSA public key (it is ${key.asymmetricKeyType})`,
      );
    return { type: 'rsa', key };
  }
  return ed25519Key(data.trim());
}

function ed25519Key(hex: string): JwtVerificationKey {
  let raw: Buffer;
  try {
    raw = decodeHex(hex);
  } catch (error) {
    if (!(error instanceof HexDecodeError)) throw error;
    throw new JwtValidationError(`could not parse ed25519 public data: ${error.message}`);
  }
  if (raw.length !== ED25519_PUBLIC_KEY_SIZE) throw new JwtValidationError('invalid ed25519 public key size');
  return { type: 'ed25519', key: ed25519PublicKeyFromRaw(raw) };
}

/** Options for {@link verifyProvisioningJwt}. */
export interface VerifyJwtOptions {
  /** The clock, in milliseconds; default `Date.now`. */
  now?: () => number;
}

/**
 * Verifies a provisioning JWT the way upstream's `tokens.ParseProvisioningToken` does and returns
 * its claims for the helper:
 * - RS256/RS384/RS512 need an RSA key and EdDSA an ed25519 key (`rsa public key required`,
 *   `ed25519 public key required`); any other algorithm is refused;
 * - the signature, `exp`, `nbf` and `iat` (not in the future) are checked, with no leeway;
 * - it must be a provisioning token: `purpose` or `sub` is `choria_provisioning`;
 * - a token carrying a trust chain signature (`tcs`) must come from a chain issuer (`iss`
 *   `C-...`) whose own expiry (`issexp`) has not passed either;
 * - `ou` defaults to `choria`. `cht` is not compared with the provisioner's token, as upstream.
 *
 * Rejects with {@link JwtValidationError}; messages start `could not parse provisioner token:`
 * when the token itself is bad.
 */
export async function verifyProvisioningJwt(
  token: string,
  key: JwtVerificationKey,
  options: VerifyJwtOptions = {},
): Promise<ProvisioningClaims> {
  const { now = Date.now } = options;
  const fail = (reason: string): never => {
    throw new JwtValidationError(`could not parse provisioner token: ${reason}`);
  };
  if (token === '') throw new JwtValidationError('no JWT received');

  let alg: string | undefined;
  try {
    alg = decodeProtectedHeader(token.trim()).alg;
  } catch (error) {
    fail(`token is malformed: ${(error as Error).message}`);
  }
  if (alg !== undefined && RSA_ALGORITHMS.includes(alg)) {
    if (key.type !== 'rsa') fail('rsa public key required');
  } else if (alg === 'EdDSA') {
    if (key.type !== 'ed25519') fail('ed25519 public key required');
  } else {
    fail(`signing method ${alg ?? '(none)'} is invalid`);
  }

  const currentMs = now();
  let payload: Record<string, unknown> = {};
  try {
    ({ payload } = await jwtVerify(token.trim(), key.key, { algorithms: [alg as string], currentDate: new Date(currentMs) }));
  } catch (error) {
    fail(joseReason(error, key.type));
  }

  const claims = normaliseClaims(payload, fail);
  if (claims.iat !== undefined && claims.iat * 1000 > currentMs) fail('token used before issued');
  if (claims.purpose !== PROVISIONING_PURPOSE && claims.sub !== PROVISIONING_PURPOSE)
    throw new JwtValidationError('not a provisioning token');
  if (claims.tcs !== undefined) {
    // Upstream's verifyIssuerExpiry(required): a chained token needs a chain issuer and an issuer
    // expiry, and neither it nor its issuer may have expired.
    if (!(claims.iss ?? '').startsWith('C-'))
      throw new JwtValidationError('token is expired: a trust chain signature without a chain issuer (iss C-...)');
    if (claims.issexp === undefined)
      throw new JwtValidationError('token is expired: a trust chain signature without an issuer expiry (issexp)');
    const expiry = Math.min(claims.issexp, claims.exp ?? Infinity);
    if (currentMs > expiry * 1000) throw new JwtValidationError('token is expired');
  }
  return claims;
}

/**
 * {@link readJwtVerificationKey} then {@link verifyProvisioningJwt}: the file is read on every call,
 * as upstream does, so a rotated key is picked up without a restart.
 */
export async function validateProvisioningJwt(
  token: string,
  jwtVerifyCert: string,
  files: SiteFiles,
  options: VerifyJwtOptions = {},
): Promise<ProvisioningClaims> {
  if (token === '') throw new JwtValidationError('no JWT received');
  return verifyProvisioningJwt(token, readJwtVerificationKey(jwtVerifyCert, files), options);
}

function joseReason(error: unknown, keyType: JwtVerificationKey['type']): string {
  if (error instanceof joseErrors.JWTExpired) return 'token is expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return 'token is not valid yet';
    return `invalid ${error.claim} claim: ${error.message}`;
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return keyType === 'rsa' ? 'crypto/rsa: verification error' : 'ed25519: verification error';
  if (error instanceof joseErrors.JOSEError) return `token is malformed: ${error.message}`;
  return (error as Error).message;
}

type StringClaim =
  'cht' | 'chu' | 'chsrv' | 'chrd' | 'chf' | 'chusr' | 'chpwd' | 'ou' | 'purpose' | 'tcs' | 'public_key' | 'iss' | 'sub' | 'jti';
type BooleanClaim = 'chs' | 'chpd' | 'v2' | 'update';
type DateClaim = 'issexp' | 'exp' | 'nbf' | 'iat';

/** Go's unmarshal-then-marshal of `ProvisioningClaims`: typed fields, Go's order, omitempty. */
function normaliseClaims(payload: Record<string, unknown>, fail: (reason: string) => never): ProvisioningClaims {
  const str = (name: StringClaim): string => {
    const v = payload[name];
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') fail(`json: cannot unmarshal ${jsonType(v)} into claim ${name} of type string`);
    return v as string;
  };
  const bool = (name: BooleanClaim): boolean => {
    const v = payload[name];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') fail(`json: cannot unmarshal ${jsonType(v)} into claim ${name} of type bool`);
    return v as boolean;
  };
  const date = (name: DateClaim): number | undefined => {
    const v = payload[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number') fail(`json: cannot unmarshal ${jsonType(v)} into claim ${name} of type NumericDate`);
    // Go marshals NumericDate at second precision.
    return Math.floor(v as number);
  };
  const extensions = payload.extensions;
  if (extensions !== undefined && extensions !== null && (typeof extensions !== 'object' || Array.isArray(extensions))) {
    fail(`json: cannot unmarshal ${jsonType(extensions)} into claim extensions of type map`);
  }
  let aud: string[] | undefined;
  if (typeof payload.aud === 'string') aud = payload.aud === '' ? undefined : [payload.aud];
  else if (Array.isArray(payload.aud) && payload.aud.every((a) => typeof a === 'string'))
    aud = payload.aud.length === 0 ? undefined : (payload.aud as string[]);
  else if (payload.aud !== undefined && payload.aud !== null) fail('json: cannot unmarshal aud: expected a string or a list of strings');

  const claims: Record<string, unknown> = {};
  const put = (name: string, value: unknown, omitEmpty: boolean): void => {
    if (omitEmpty && (value === '' || value === false || value === undefined)) return;
    claims[name] = value;
  };
  put('cht', str('cht'), false);
  put('chs', bool('chs'), false);
  put('chu', str('chu'), true);
  put('chsrv', str('chsrv'), true);
  put('chpd', bool('chpd'), false);
  put('chrd', str('chrd'), true);
  put('chf', str('chf'), true);
  put('chusr', str('chusr'), true);
  put('chpwd', str('chpwd'), true);
  put('extensions', extensions ?? null, false);
  // ParseProvisioningToken defaults the organisation unit.
  put('ou', str('ou') === '' ? 'choria' : str('ou'), true);
  put('v2', bool('v2'), true);
  put('update', bool('update'), true);
  put('purpose', str('purpose'), false);
  put('tcs', str('tcs'), true);
  put('public_key', str('public_key'), true);
  put('issexp', date('issexp'), true);
  put('iss', str('iss'), true);
  put('sub', str('sub'), true);
  put('aud', aud, true);
  put('exp', date('exp'), true);
  put('nbf', date('nbf'), true);
  put('iat', date('iat'), true);
  put('jti', str('jti'), true);
  return claims as unknown as ProvisioningClaims;
}

function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'object' : typeof value;
}
