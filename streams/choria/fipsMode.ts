import { lazyCrypto } from '../../lib/lazyCrypto';
import { CallerHash } from '../../lib/choria/protocol/subjects';

/** Whether this process runs in FIPS 140 mode, and what says so. */
export interface FipsMode {
  on: boolean;
  /** `GODEBUG=fips140=on` (as a go-choria unit turns it on), or Node's own FIPS mode. */
  reason?: string;
  /** What reply subjects and inboxes hash the caller id with. */
  callerHash: CallerHash;
}

/**
 * FIPS 140 mode as go-choria 0.30 decides it (`crypto/fips140.Enabled()`, which its client, broker
 * and connector consult before naming a reply subject), read where a site sets it: `fips140=on` or
 * `only` in `GODEBUG`, which a Go daemon's unit or environment file carries and rxfleet inherits
 * when it takes the Go provisioner's place; or Node's own FIPS mode (`--enable-fips`, an OpenSSL
 * configuration that turns it on), in which MD5 is not even available. Then reply subjects hash
 * the caller id with SHA-256, which is all a FIPS broker grants; otherwise MD5, as go-choria.
 */
export function fipsMode(env: Record<string, string | undefined> = process.env, nodeFips: () => number = nodeFipsMode): FipsMode {
  const setting = (env.GODEBUG ?? '')
    .split(',')
    .map((s) => s.trim())
    .find((s) => s.startsWith('fips140='));
  if (setting === 'fips140=on' || setting === 'fips140=only') return { on: true, reason: `GODEBUG=${setting}`, callerHash: 'sha256' };
  if (nodeFips() === 1) return { on: true, reason: "Node's FIPS mode", callerHash: 'sha256' };
  return { on: false, callerHash: 'md5' };
}

/** Node's own FIPS mode (the crypto module loaded only when asked). */
function nodeFipsMode(): number {
  return lazyCrypto().getFips();
}
