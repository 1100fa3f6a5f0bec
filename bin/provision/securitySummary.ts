import { ConnectionPlan, connectionPlan } from '../../streams/choria/connectionPlan';
import { Pkcs11PinSource, pkcs11PinSource } from '../../streams/choria/pkcs11Pin';
import { inspectPkcs11Token } from './pkcs11Check';
import type { PreflightContext } from './preflight';
import type { Pkcs11Token } from '../../streams/choria/pkcs11Token';

/** What TLS to the broker will be: off, encrypted only, verified, or verified both ways. */
function tlsMode(plan: ConnectionPlan): string {
  const security = plan.security;
  if (security?.tls === undefined) return 'off';
  if (!security.tls.verify) return 'encrypted, not verified';
  return security.tls.cert !== undefined || security.pkcs11 !== undefined ? 'mutual, verified' : 'verified';
}

function requestsMode(plan: ConnectionPlan): string {
  if (plan.protocol.version === 'v2') return 'v2, signed with the seed';
  if (plan.security?.pkcs11 !== undefined) return "v1, signed with the token's key";
  return plan.protocol.signer !== undefined ? 'v1, signed with the x509 key' : 'v1, unsigned';
}

/**
 * The line the daemon logs before it connects, for the first hour after a switch: which provider,
 * which caller, what TLS, which protocol (`security provider file: caller choria=..., TLS mutual,
 * verified, requests v1, signed with the x509 key`), in FIPS 140 mode how replies are named, and its fields.
 */
export function securityLine(plan: ConnectionPlan): [object, string] {
  const security = plan.security;
  const tls = tlsMode(plan);
  const requests = requestsMode(plan);
  const replies = plan.fips.on ? `, replies under sha256 of the caller (FIPS 140 mode: ${plan.fips.reason})` : '';
  return [
    { provider: security?.provider, certname: security?.certname, callerId: plan.callerId, tls, requests, fips: plan.fips.on },
    `security provider ${security?.provider ?? 'unknown'}: caller ${plan.callerId}, TLS ${tls}, requests ${requests}${replies}`,
  ];
}

/**
 * {@link securityLine}'s message followed by what start-up will use, for `validate`: the key, the
 * certificate and the CA (files, or the token's objects and where its PIN comes from), the
 * `choria` provider's token and seed. File names only; nothing they hold.
 */
export function securityDetailsLine(plan: ConnectionPlan, token?: Pkcs11Token, pin?: Pkcs11PinSource): string {
  const [, line] = securityLine(plan);
  const security = plan.security;
  const parts: string[] = [];
  if (security?.pkcs11 !== undefined) {
    const where =
      token === undefined ? 'the token' : `the token ${JSON.stringify(token.tokenLabel)} (serial ${token.serial}, slot ${token.slotId})`;
    parts.push(`key: the private key on ${where} through OpenSSL's pkcs11 engine (driver ${security.pkcs11.driverFile})`);
    parts.push(`certificate: the token's${token === undefined ? '' : ` (CN=${token.commonName})`}`);
    parts.push(`CA ${security.pkcs11.ca}`);
    if (pin !== undefined)
      parts.push(
        pin.kind === 'file'
          ? `PIN from ${pin.file} (rxfleet.pkcs11_pin_file)`
          : pin.kind === 'terminal'
            ? 'PIN asked on the terminal at start'
            : 'no PIN source',
      );
  } else if (security?.x509 !== undefined) {
    parts.push(`key ${security.x509.key}`, `certificate ${security.x509.certificate}`, `CA ${security.x509.ca}`);
  } else if (security?.jwt !== undefined) {
    parts.push(`token ${security.jwt.tokenFile}`, `seed ${security.jwt.seedFile}`);
    if (security.tls?.cert !== undefined) parts.push(`TLS certificate ${security.tls.cert}`, `TLS key ${security.tls.key ?? ''}`);
    if (security.tls?.ca !== undefined) parts.push(`CA ${security.tls.ca}`);
  }
  return parts.length === 0 ? line : `${line}; ${parts.join(', ')}`;
}

/**
 * `validate`'s line about the security provider: the plan start-up makes (with the `pkcs11`
 * token opened as the check opens it, so the caller is the certificate's common name), said by
 * {@link securityDetailsLine}.
 */
export function validateSecurityLine(context: PreflightContext): string {
  const { token } = inspectPkcs11Token(context);
  try {
    const plan = connectionPlan(context.config, context.choria, token !== undefined ? { pkcs11: token } : {});
    return securityDetailsLine(plan, token, token !== undefined ? pkcs11PinSource(context.config.rxfleet.pkcs11PinFile) : undefined);
  } finally {
    token?.close();
  }
}
