/**
 * The claims of a compact JWT, read without verifying it (jose's `decodeJwt` does the same, but
 * loads its crypto runtime with it: milliseconds of every operator's command that reads a Choria
 * configuration, none of which verifies a signature). Throws an Error saying what is wrong: not
 * three dot-separated parts, a payload that is not base64url, not JSON, or not a JSON object.
 */
export function jwtClaims(token: string): Record<string, unknown> {
  const parts = token.split('.');
  if (parts.length === 5) throw new Error('only JWTs using Compact JWS serialization can be decoded');
  if (parts.length !== 3) throw new Error('Invalid JWT');
  const payload = parts[1];
  if (payload === '' || !/^[A-Za-z0-9_-]+$/.test(payload)) throw new Error('Failed to base64url decode the payload');
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new Error('Failed to parse the decoded payload as JSON');
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw new Error('Invalid JWT Claims Set');
  return claims as Record<string, unknown>;
}
