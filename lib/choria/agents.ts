import Ajv, { ValidateFunction } from 'ajv';
import { lazyValidator } from './protocol/schemas';

/**
 * The RPCs the provisioner makes (§3.3, §3.4): agent, action, the number of tries of the Go
 * provisioner's table, the request inputs and the reply data, with a JSON Schema for each reply so
 * a malformed reply is refused before anything reads it.
 */

/** The agents' DDL timeouts in seconds; an attempt waits `discovery_timeout` plus this. */
export const DDL_TIMEOUT_SECONDS: Readonly<Record<string, number>> = { choria_provision: 20, rpcutil: 2, discovery: 2, choria_util: 2 };

/** choria.cfg's `discovery_timeout` default, in seconds. */
export const DEFAULT_DISCOVERY_TIMEOUT_SECONDS = 2;

/**
 * How long one attempt of an RPC to `agent` waits for its reply, as go-choria's `NewRequestOptions`:
 * the discovery timeout plus the agent's DDL timeout (22 s for choria_provision, 4 s for rpcutil).
 */
export function attemptTimeoutMs(agent: string, discoveryTimeoutSeconds = DEFAULT_DISCOVERY_TIMEOUT_SECONDS): number {
  return (discoveryTimeoutSeconds + (DDL_TIMEOUT_SECONDS[agent] ?? 2)) * 1000;
}

/** One RPC of the provisioning cycle. */
export interface ActionSpec<I extends object, O> {
  agent: string;
  action: string;
  /** The metric and log label, `choria_provision#jwt` or `rpcutil#inventory`. */
  rpc: string;
  /** Attempts the retry wrapper makes at most. */
  tries: number;
  /** Validates (and fills DDL defaults into) the reply data. */
  validate: ValidateFunction<O>;
  /** Never called: carries the input type. */
  readonly input?: I;
}

export interface TokenInput {
  token: string;
}
export interface JwtOutput {
  /** The raw provisioning JWT. */
  jwt: string;
  /** Hex of the server's X25519 public key, regenerated on every call. */
  ecdh_public: string;
}
export interface Gen25519Input {
  /** 32 hex characters (a request id). */
  nonce: string;
  token: string;
}
export interface Gen25519Output {
  public_key: string;
  directory: string;
  /** Hex ed25519 signature of the nonce's bytes. */
  signature: string;
}
export interface InventoryOutput {
  agents: string[];
  classes: string[];
  collectives: string[];
  data_plugins: string[];
  facts: Record<string, unknown>;
  machines: unknown[];
  main_collective: string;
  version: string;
  upgradable: boolean;
  [extra: string]: unknown;
}
export interface GencsrInput {
  token: string;
  cn: string;
}
export interface GencsrOutput {
  /** PEM `CERTIFICATE REQUEST`. */
  csr: string;
  /** PEM labelled `PUBLIC KEY` holding PKCS#1 DER, as go-choria writes it. */
  public_key: string;
  ssldir: string;
}
/** Every key is always sent; empty values are `""` or `{}` (§3.4). */
export interface ConfigureInput {
  /** JSON of the configuration map. */
  config: string;
  token: string;
  ca: string;
  certificate: string;
  ssldir: string;
  /** The private key, encrypted for this server (§3.8), or `""`. */
  key: string;
  ecdh_public: string;
  action_policies: Record<string, string>;
  opa_policies: Record<string, string>;
  server_jwt: string;
}
export interface RestartInput {
  token: string;
  splay: number;
}
export interface ReleaseUpdateInput {
  repository: string;
  token: string;
  version: string;
}
export interface MessageOutput {
  message: string;
}

// A separate instance: this one fills DDL output defaults into reply data, the protocol's must not.
const ajv = new Ajv({ useDefaults: true, strict: true, strictTypes: false });
const strings = (...names: string[]) => Object.fromEntries(names.map((n) => [n, { type: 'string' }]));

// The DDL's output defaults (go-choria's choria_provision DDL), filled in as upstream's generated
// client fills them (`SetOutputDefaults` before the reply is read): a server before 0.23 sends
// `edch_public`, not `ecdh_public`, which reads as "" (fatal only when a private key must be sent
// to it), and an empty `jwt` is a reply that fails at once with "no JWT received", not a malformed
// one that waits out three timeouts.
const validJwt = lazyValidator<JwtOutput>(ajv, {
  type: 'object',
  properties: { jwt: { type: 'string', default: '' }, ecdh_public: { type: 'string', default: '' } },
});
const validGen25519 = lazyValidator<Gen25519Output>(ajv, {
  type: 'object',
  properties: {
    public_key: { type: 'string', default: '' },
    directory: { type: 'string', default: '' },
    signature: { type: 'string', default: '' },
  },
});
const validInventory = lazyValidator<InventoryOutput>(ajv, {
  type: 'object',
  properties: {
    agents: { type: 'array', items: { type: 'string' }, default: [] },
    classes: { type: 'array', items: { type: 'string' }, default: [] },
    collectives: { type: 'array', items: { type: 'string' }, default: [] },
    data_plugins: { type: 'array', items: { type: 'string' }, default: [] },
    facts: { type: 'object', default: {} },
    machines: { type: 'array', default: [] },
    main_collective: { type: 'string', default: '' },
    version: { type: 'string', default: '' },
    upgradable: { type: 'boolean', default: false },
  },
});
const validGencsr = lazyValidator<GencsrOutput>(ajv, {
  type: 'object',
  required: ['csr', 'public_key', 'ssldir'],
  properties: strings('csr', 'public_key', 'ssldir'),
});
const validMessage = lazyValidator<MessageOutput>(ajv, { type: 'object', properties: { message: { type: 'string', default: '' } } });

function spec<I extends object, O>(agent: string, action: string, tries: number, validate: ValidateFunction<O>): ActionSpec<I, O> {
  return { agent, action, rpc: `${agent}#${action}`, tries, validate };
}

/** The provisioner's RPCs, with the tries of go-choria's provisioner. */
export const PROVISION_RPCS = {
  jwt: spec<TokenInput, JwtOutput>('choria_provision', 'jwt', 3, validJwt),
  gen25519: spec<Gen25519Input, Gen25519Output>('choria_provision', 'gen25519', 5, validGen25519),
  inventory: spec<Record<string, never>, InventoryOutput>('rpcutil', 'inventory', 5, validInventory),
  gencsr: spec<GencsrInput, GencsrOutput>('choria_provision', 'gencsr', 1, validGencsr),
  configure: spec<ConfigureInput, MessageOutput>('choria_provision', 'configure', 5, validMessage),
  restart: spec<RestartInput, MessageOutput>('choria_provision', 'restart', 3, validMessage),
  shutdown: spec<TokenInput, MessageOutput>('choria_provision', 'shutdown', 3, validMessage),
  release_update: spec<ReleaseUpdateInput, MessageOutput>('choria_provision', 'release_update', 3, validMessage),
} as const;

/** One line for why reply data failed its schema. */
export function replyDataErrors(validate: ValidateFunction): string {
  return ajv.errorsText(validate.errors, { dataVar: 'data' });
}
