import { ServerClaimsOverrides, ServerPermissions } from '../credentials/serverJwt';

/** What the helper answered (upstream's `ConfigResponse`), with Go's zero values for what it left out. */
export interface HelperResponse {
  /** Soft failure: retried at the next discovery or event. */
  defer: boolean;
  /** Ask the node to exit 0 (systemd will not restart it). */
  shutdown: boolean;
  /** The reason, logged. */
  msg: string;
  /** The server configuration; must set `plugin.choria.server.provision=false`. */
  configuration: Record<string, string>;
  /** `*.policy` file name to content. */
  actionPolicies: Record<string, string>;
  /** `*.rego` file name to content. */
  opaPolicies: Record<string, string>;
  /** PEM, pki flow. */
  certificate: string;
  ca: string;
  /** An optional private key, encrypted in transit (§3.8). */
  key: string;
  ssldir: string;
  /** The ed25519 flow's claims for the server JWT, when given. */
  serverClaims: ServerClaimsOverrides | undefined;
  /** Target version (features.upgrades); empty for none. */
  upgrade: string;
}

/** Helper output that cannot be decoded; the message is the reason, without the helper's name. */
export class HelperOutputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HelperOutputError';
  }
}

type FieldKind = 'bool' | 'string' | 'map' | 'claims';
// JSON key -> response field and type. A Map, so keys such as "constructor" find nothing.
const FIELDS = new Map<string, [keyof HelperResponse, FieldKind]>([
  ['defer', ['defer', 'bool']],
  ['shutdown', ['shutdown', 'bool']],
  ['msg', ['msg', 'string']],
  ['configuration', ['configuration', 'map']],
  ['action_policies', ['actionPolicies', 'map']],
  ['opa_policies', ['opaPolicies', 'map']],
  ['certificate', ['certificate', 'string']],
  ['ca', ['ca', 'string']],
  ['key', ['key', 'string']],
  ['ssldir', ['ssldir', 'string']],
  ['server_claims', ['serverClaims', 'claims']],
  ['upgrade', ['upgrade', 'string']],
]);

/**
 * Decodes the helper's stdout as Go's `json.Unmarshal` into `ConfigResponse` would: keys match
 * case-insensitively (the last of two spellings wins), unknown keys are ignored, `null` leaves the
 * zero value, and a value of the wrong type is an error naming the field. `null` as the whole
 * document is an empty response, as in Go. Of `server_claims` only what upstream uses is kept
 * (`ou`, `exp`, `collectives`, `pub_subjects`, `permissions`). Throws {@link HelperOutputError}.
 */
export function decodeHelperResponse(text: string): HelperResponse {
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new HelperOutputError((error as Error).message);
  }
  return helperResponseFrom(document);
}

/**
 * The helper response in an already parsed JSON document, decoded by the rules of
 * {@link decodeHelperResponse} (the persistent helper's lines are parsed once, for their `id`).
 * Throws {@link HelperOutputError}.
 */
export function helperResponseFrom(document: unknown): HelperResponse {
  const response: HelperResponse = {
    defer: false,
    shutdown: false,
    msg: '',
    configuration: {},
    actionPolicies: {},
    opaPolicies: {},
    certificate: '',
    ca: '',
    key: '',
    ssldir: '',
    serverClaims: undefined,
    upgrade: '',
  };
  if (document === null) return response;
  if (typeof document !== 'object' || Array.isArray(document))
    throw new HelperOutputError(`json: cannot unmarshal ${jsonType(document)} into the helper response (expected an object)`);

  const target = response as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(document as Record<string, unknown>)) {
    const where = key.toLowerCase();
    const field = FIELDS.get(where);
    if (field === undefined || value === null) continue;
    const [name, kind] = field;
    if (kind === 'bool') target[name] = expect(value, 'boolean', where);
    else if (kind === 'string') target[name] = expect(value, 'string', where);
    else if (kind === 'map') target[name] = stringMap(value, where);
    else target[name] = serverClaims(value);
  }
  return response;
}

function expect<T extends 'boolean' | 'string' | 'number'>(
  value: unknown,
  type: T,
  where: string,
): T extends 'boolean' ? boolean : T extends 'string' ? string : number {
  if (typeof value !== type)
    throw new HelperOutputError(
      `json: cannot unmarshal ${jsonType(value)} into field ${where} of type ${type === 'boolean' ? 'bool' : type}`,
    );
  return value as never;
}

function stringMap(value: unknown, where: string): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new HelperOutputError(`json: cannot unmarshal ${jsonType(value)} into field ${where} of type map[string]string`);
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    // A null member is Go's zero value for string.
    out[k] = v === null ? '' : expect(v, 'string', `${where}.${k}`);
  }
  return out;
}

function stringList(value: unknown, where: string): string[] {
  if (!Array.isArray(value)) throw new HelperOutputError(`json: cannot unmarshal ${jsonType(value)} into field ${where} of type []string`);
  return value.map((v, i) => (v === null ? '' : expect(v, 'string', `${where}[${i}]`)));
}

function serverClaims(value: unknown): ServerClaimsOverrides {
  if (typeof value !== 'object' || Array.isArray(value))
    throw new HelperOutputError(`json: cannot unmarshal ${jsonType(value)} into field server_claims of type ServerClaims`);
  const claims: ServerClaimsOverrides = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    if (v === null) continue;
    switch (key.toLowerCase()) {
      case 'ou':
        claims.ou = expect(v, 'string', 'server_claims.ou');
        break;
      case 'exp':
        claims.exp = expect(v, 'number', 'server_claims.exp');
        break;
      case 'collectives':
        claims.collectives = stringList(v, 'server_claims.collectives');
        break;
      case 'pub_subjects':
        claims.pub_subjects = stringList(v, 'server_claims.pub_subjects');
        break;
      case 'permissions':
        claims.permissions = permissions(v);
        break;
      default:
      // Upstream decodes the other claims too and then ignores them.
    }
  }
  return claims;
}

function permissions(value: unknown): ServerPermissions {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new HelperOutputError(`json: cannot unmarshal ${jsonType(value)} into field server_claims.permissions of type ServerPermissions`);
  const out: ServerPermissions = {};
  for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
    const name = (['submission', 'streams', 'governor', 'service_host'] as const).find((p) => p === key.toLowerCase());
    if (name === undefined || v === null) continue;
    out[name] = expect(v, 'boolean', `server_claims.permissions.${name}`);
  }
  return out;
}

function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  return typeof value === 'object' ? 'object' : typeof value;
}
