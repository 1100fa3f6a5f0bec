import { CsrReply } from '../credentials/csrValidation';
import { Ed25519Reply } from '../credentials/gen25519Reply';
import { ProvisioningClaims } from '../credentials/provisioningJwt';

/**
 * What the helper reads on stdin: upstream's `Host` JSON (reference §3.1), keys in this order.
 * `inventory` is a JSON *string* (helpers `JSON.parse(request.inventory)`), empty when no
 * inventory was fetched; the other parts are `null` when their feature is off.
 */
export interface HelperInput {
  identity: string;
  csr: CsrReply | null;
  ed25519_pubkey: Ed25519Reply | null;
  inventory: string;
  jwt: ProvisioningClaims | null;
}

/** The parts of a provisioning cycle the helper input is built from. */
export interface HelperInputParts {
  identity: string;
  /** The validated `gencsr` reply (features.pki). */
  csr?: CsrReply | null;
  /** The validated `gen25519` reply (features.ed25519). */
  ed25519?: Ed25519Reply | null;
  /** The `rpcutil#inventory` reply data, or its JSON text as received. */
  inventory?: Record<string, unknown> | string | null;
  /** The verified provisioning JWT's claims (features.jwt). */
  jwt?: ProvisioningClaims | null;
}

/**
 * Builds the helper input. An inventory object is encoded as Go's `json.Marshal` of a map would
 * be: keys sorted at every level, so helpers see the same text as with upstream.
 */
export function buildHelperInput(parts: HelperInputParts): HelperInput {
  const { inventory } = parts;
  return {
    identity: parts.identity,
    csr: parts.csr ?? null,
    ed25519_pubkey: parts.ed25519 ?? null,
    inventory: inventory == null ? '' : typeof inventory === 'string' ? inventory : stringifySorted(inventory),
    jwt: parts.jwt ?? null,
  };
}

/** The text written to the helper's stdin. */
export function encodeHelperInput(input: HelperInput): string {
  return JSON.stringify(input);
}

/**
 * JSON with object keys sorted at every level, as Go marshals maps. Written out by hand because a
 * JavaScript object always lists integer-like keys first, where Go sorts `"10"` before `"2"`.
 */
export function stringifySorted(value: unknown): string {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    return stringifySorted((value as { toJSON: () => unknown }).toJSON());
  }
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined || typeof item === 'function' ? 'null' : stringifySorted(item))).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined && typeof v !== 'function')
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stringifySorted(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
