import { createPrivateKey } from 'node:crypto';
import { PROVISIONING_LOCK_MESSAGE, StatusCode, errorMessage } from '../choria/errors';
import { decryptPrivateKey, generateX25519KeyPair } from '../choria/keyTransport';
import { LifecycleType } from '../choria/lifecycle';
import { decodePem } from '../choria/pem';
import { AgentReply, AgentRequest } from '../choria/protocol/mcorpc';
import { ChoriaRequest, Filter } from '../choria/protocol/types';
import { FleetKeys } from './fleetKeys';
import { SimulatedNode } from './simulatedNode';

/**
 * What a Choria server in provisioning mode does with each request (go-choria's
 * `providers/agent/mcorpc/golang/provision`, rpcutil and discovery agents, §3.4), on one
 * simulated node. No files are written: what a real server would write is kept in the node's record.
 */

/** The agents a provisioning-mode server runs (and subscribes to broadcasts for). */
export const PROVISIONING_AGENTS = ['choria_provision', 'choria_util', 'discovery', 'rpcutil'] as const;

/** What the agents need from the fleet around them. */
export interface ServerContext {
  /** The token built into the servers (`cht`); empty means no check. */
  token: string;
  keys: FleetKeys;
  /** What `rpcutil#inventory` says in `upgradable`. */
  upgradable: boolean;
  /** Whether the provisioning JWT allows `release_update` (its `update` claim). */
  allowUpdates: boolean;
  /** `release_update` fails (and rolls back). */
  failUpgrades: boolean;
  /** The server's configuration file and its directory. */
  configFile: string;
  configDir: string;
  lockWindowMs: number;
  now(): number;
  random(): number;
  /** Publish a lifecycle event for the node (component: provision_mode_server while in provisioning mode). */
  publishLifecycle(node: SimulatedNode, type: LifecycleType, fields?: { version?: string; newVersion?: string }): void;
  /** Restart after `delaySeconds` (the splay), into the new version when upgrading. */
  restart(node: SimulatedNode, delaySeconds: number, upgradeTo?: string): void;
  /** Stop after `delaySeconds`. */
  shutdown(node: SimulatedNode, delaySeconds: number): void;
  /** Tell the fleet something happened that its statistics count. */
  /** `configured-by-two` follows `configured` once per node: when a second caller's configure succeeds. */
  note(
    event: 'configured' | 'configured-by-two' | 'lock-refused' | 'token-refused' | 'upgraded' | 'upgrade-failed',
    node: SimulatedNode,
  ): void;
}

const ok = (data: unknown, action: string): AgentReply => ({ statuscode: StatusCode.OK, statusmsg: 'OK', data, action });
const abort = (message: string, action: string): AgentReply => ({ statuscode: StatusCode.Aborted, statusmsg: message, data: {}, action });

/** `Provision` is off unless a falsy value says so; Choria reads bools from config as these words. */
const FALSE_WORDS = new Set(['false', 'no', 'n', 'f', '0', 'off']);
const TRUE_WORDS = new Set(['true', 'yes', 'y', 't', '1', 'on']);
const PROVISION_KEY = 'plugin.choria.server.provision';

/** Whether a written configuration takes the server out of provisioning mode when it restarts. */
export function leavesProvisioning(configuration: Record<string, string> | undefined): boolean {
  const value = configuration?.[PROVISION_KEY];
  return value !== undefined && FALSE_WORDS.has(value.trim().toLowerCase());
}

function enablesProvisioning(configuration: Record<string, string> | undefined): boolean {
  const value = configuration?.[PROVISION_KEY];
  return value !== undefined && TRUE_WORDS.has(value.trim().toLowerCase());
}

function isPrivateKey(pem: string): boolean {
  const der = decodePem(pem)?.bytes;
  if (der === undefined) return false;
  for (const type of ['pkcs1', 'pkcs8', 'sec1'] as const) {
    try {
      createPrivateKey({ key: der, format: 'der', type });
      return true;
    } catch {
      // try the next encoding
    }
  }
  return false;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const stringMap = (value: unknown): Record<string, string> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'))
    : {};

/** Whether a node answers a request with this filter (agents it runs, its identity; it has no facts or classes). */
export function matchesFilter(node: SimulatedNode, filter: Filter): boolean {
  if (filter.fact.length > 0 || filter.cf_class.length > 0 || filter.compound.length > 0) return false;
  if (!filter.agent.every((agent) => (PROVISIONING_AGENTS as readonly string[]).includes(agent))) return false;
  if (filter.identity.length === 0) return true;
  return filter.identity.some((wanted) => {
    const pattern = /^\/(.*)\/$/.exec(wanted);
    if (pattern === null) return wanted === node.identity;
    try {
      return new RegExp(pattern[1]).test(node.identity);
    } catch {
      return false;
    }
  });
}

/** The discovery agent: `pong` to a body containing `ping`, nothing otherwise. */
export function discoveryReply(payload: string): string | undefined {
  return payload.includes('ping') ? 'pong' : undefined;
}

// go-choria's lockedAction: the first caller takes a 2-minute lock, extended by each of its locked calls.
function takeLock(node: SimulatedNode, request: ChoriaRequest, context: ServerContext): boolean {
  const holder = `${request.senderId}.${request.callerId}`;
  const now = context.now();
  if (node.lock !== undefined && node.lock.until > now && node.lock.holder !== holder) return false;
  node.lock = { holder, until: now + context.lockWindowMs };
  return true;
}

function tokenRefusal(node: SimulatedNode, token: unknown, action: string, context: ServerContext): AgentReply | undefined {
  if (context.token === '' || token === context.token) return undefined;
  node.tokenRefusals++;
  context.note('token-refused', node);
  return abort('Incorrect provision token supplied', action);
}

const NOT_PROVISIONING = 'Cannot reconfigure a server that is not in provisioning mode';
const LOCKED_ACTIONS = new Set(['configure', 'gen25519', 'gencsr', 'jwt', 'release_update']);

/**
 * The reply of one node to one RPC (`undefined`: the server does not answer, e.g. an agent it does
 * not run). Locked actions check the lock first, then the mode, then the token, as go-choria does.
 */
export function handleRpc(
  node: SimulatedNode,
  request: ChoriaRequest,
  rpc: AgentRequest,
  context: ServerContext,
): AgentReply | Promise<AgentReply> | undefined {
  const { agent, action, data } = rpc;
  if (!(PROVISIONING_AGENTS as readonly string[]).includes(agent)) return undefined;
  const label = `${agent}#${action}`;
  node.requests[label] = (node.requests[label] ?? 0) + 1;
  if (agent === 'rpcutil') {
    if (action === 'inventory') return ok(inventory(node, context), action);
    // rpcutil#ping answers the server's clock, in seconds.
    if (action === 'ping') return ok({ pong: Math.floor(context.now() / 1000) }, action);
    return unknownAction(agent, action);
  }
  if (agent !== 'choria_provision') return unknownAction(agent, action);
  if (LOCKED_ACTIONS.has(action) && !takeLock(node, request, context)) {
    node.lockRefusals++;
    context.note('lock-refused', node);
    return abort(PROVISIONING_LOCK_MESSAGE, action);
  }
  switch (action) {
    case 'jwt':
      return jwt(node, data, context);
    case 'gen25519':
      return gen25519(node, data, context);
    case 'gencsr':
      return gencsr(node, data, context);
    case 'configure':
      return configure(node, request, data, context);
    case 'restart':
      return restart(node, data, context);
    case 'shutdown':
      return shutdown(node, data, context);
    case 'release_update':
      return releaseUpdate(node, data, context);
    case 'reprovision':
      // Only a configured server can be put back into provisioning mode, and a simulated server
      // answers on the provisioning collective only while in provisioning mode.
      return abort('Server is already in provisioning mode, cannot enable provisioning mode again', action);
    default:
      return unknownAction(agent, action);
  }
}

function unknownAction(agent: string, action: string): AgentReply {
  return { statuscode: StatusCode.UnknownAction, statusmsg: `Unknown action ${action} for agent ${agent}`, data: {}, action };
}

function inventory(node: SimulatedNode, context: ServerContext): Record<string, unknown> {
  return {
    agents: [...PROVISIONING_AGENTS],
    classes: [],
    collectives: ['provisioning'],
    data_plugins: [],
    facts: {},
    machines: [],
    main_collective: 'provisioning',
    version: node.version,
    upgradable: context.upgradable,
  };
}

function jwt(node: SimulatedNode, data: Record<string, unknown>, context: ServerContext): AgentReply {
  if (node.state !== 'provisioning') return abort(NOT_PROVISIONING, 'jwt');
  const refused = tokenRefusal(node, data.token, 'jwt', context);
  if (refused !== undefined) return refused;
  // Regenerated on every call: a configure must use the key of the latest jwt call (§3.8).
  node.ecdh = generateX25519KeyPair();
  // Servers before 0.23 named the output `edch_public`; a configure needs no key from them unless one is sent.
  const ecdhKey = sentEdchPublic(node.version) ? 'edch_public' : 'ecdh_public';
  return ok({ jwt: context.keys.jwt, [ecdhKey]: node.ecdh.publicKey.toString('hex') }, 'jwt');
}

/** Whether a server of this version answers `jwt` with `edch_public` (go-choria before 0.23). */
export function sentEdchPublic(version: string): boolean {
  const match = /^v?(\d+)\.(\d+)/.exec(version);
  return match !== null && Number(match[1]) === 0 && Number(match[2]) < 23;
}

function gen25519(node: SimulatedNode, data: Record<string, unknown>, context: ServerContext): AgentReply {
  if (node.state !== 'provisioning') return abort(NOT_PROVISIONING, 'gen25519');
  const refused = tokenRefusal(node, data.token, 'gen25519', context);
  if (refused !== undefined) return refused;
  const key = context.keys.ed25519();
  node.ed25519PublicKey = key.publicKeyHex;
  return ok({ public_key: key.publicKeyHex, directory: context.configDir, signature: key.signHex(text(data.nonce)) }, 'gen25519');
}

async function gencsr(node: SimulatedNode, data: Record<string, unknown>, context: ServerContext): Promise<AgentReply> {
  if (node.state !== 'provisioning') return abort(NOT_PROVISIONING, 'gencsr');
  const refused = tokenRefusal(node, data.token, 'gencsr', context);
  if (refused !== undefined) return refused;
  const cn = text(data.cn) === '' ? node.identity : text(data.cn);
  try {
    const { csr, publicKey } = await context.keys.csr(cn);
    node.csr = csr;
    return ok({ csr, public_key: publicKey, ssldir: `${context.configDir}/ssl` }, 'gencsr');
  } catch (error) {
    return abort(`Could not create CSR: ${errorMessage(error)}`, 'gencsr');
  }
}

function configure(node: SimulatedNode, request: ChoriaRequest, data: Record<string, unknown>, context: ServerContext): AgentReply {
  if (node.state !== 'provisioning') return abort(NOT_PROVISIONING, 'configure');
  const refused = tokenRefusal(node, data.token, 'configure', context);
  if (refused !== undefined) return refused;
  const configText = text(data.config);
  if (configText === '') return abort('Did not receive any configuration to write, cannot write a empty configuration file', 'configure');
  const key = text(data.key);
  const ecdhPublic = text(data.ecdh_public);
  if (key !== '' && ecdhPublic === '') return abort('EDCH Public Key not supplied while sending a private key', 'configure');
  let settings: Record<string, string>;
  try {
    const parsed: unknown = JSON.parse(configText);
    if (
      typeof parsed !== 'object' ||
      parsed === null ||
      Array.isArray(parsed) ||
      !Object.values(parsed).every((v) => typeof v === 'string')
    )
      throw new Error('expected a JSON object of strings');
    settings = parsed as Record<string, string>;
  } catch (error) {
    return abort(`Could not decode configuration data: ${errorMessage(error)}`, 'configure');
  }
  const actionPolicies = stringMap(data.action_policies);
  const opaPolicies = stringMap(data.opa_policies);
  const badPolicy =
    Object.keys(actionPolicies).find((name) => !name.endsWith('.policy')) ??
    Object.keys(opaPolicies).find((name) => !name.endsWith('.rego'));
  if (badPolicy !== undefined) return abort(`Invalid policy file name ${badPolicy}`, 'configure');

  const certificate = text(data.certificate);
  const ca = text(data.ca);
  const ssldir = text(data.ssldir);
  let decrypted: string | undefined;
  if (certificate !== '' && ssldir !== '' && ca !== '' && key !== '') {
    try {
      if (node.ecdh === undefined) throw new Error('private key not set');
      decrypted = decryptPrivateKey(key, ecdhPublic, node.ecdh.privateKey);
      // A wrong secret gives valid padding about once in 256 tries, and Go would then write garbage;
      // the simulation checks the bytes are a key so a test never mistakes garbage for a delivered key.
      if (!isPrivateKey(decrypted)) throw new Error('the decrypted key is not a private key');
    } catch (error) {
      node.keyError = errorMessage(error);
      return abort(`Could not decrypt private key: ${errorMessage(error)}`, 'configure');
    }
  }

  node.configuration = settings;
  if (certificate !== '' && ssldir !== '' && ca !== '') {
    node.certificate = certificate;
    node.ca = ca;
    node.ssldir = ssldir;
    if (decrypted !== undefined) {
      node.key = decrypted;
      node.keyError = undefined;
    }
  }
  const serverJwt = text(data.server_jwt);
  if (serverJwt !== '') node.serverJwt = serverJwt;
  if (Object.keys(actionPolicies).length > 0) node.actionPolicies = actionPolicies;
  if (Object.keys(opaPolicies).length > 0) node.opaPolicies = opaPolicies;
  node.configured++;
  const callers = node.configuredBy.size;
  node.configuredBy.add(request.callerId);
  context.note('configured', node);
  // Counted once per node, at the second caller: a third caller, or the first again, is only a duplicate.
  if (callers === 1 && node.configuredBy.size === 2) context.note('configured-by-two', node);
  context.publishLifecycle(node, 'provisioned');
  return ok({ message: `Wrote ${Object.keys(settings).length + 1} lines to ${context.configFile}` }, 'configure');
}

function restart(node: SimulatedNode, data: Record<string, unknown>, context: ServerContext): AgentReply {
  const refused = tokenRefusal(node, data.token, 'restart', context);
  if (refused !== undefined) return refused;
  if (enablesProvisioning(node.configuration))
    return abort(`Configuration ${context.configFile} enables provisioning, restart cannot continue`, 'restart');
  const splay = typeof data.splay === 'number' && data.splay > 0 ? Math.floor(data.splay) : 10;
  const seconds = Math.floor(context.random() * splay) + 2;
  context.restart(node, seconds);
  return ok({ message: `Restarting Choria Server after ${seconds}s` }, 'restart');
}

function shutdown(node: SimulatedNode, data: Record<string, unknown>, context: ServerContext): AgentReply {
  const refused = tokenRefusal(node, data.token, 'shutdown', context);
  if (refused !== undefined) return refused;
  const seconds = Math.floor(context.random() * 10);
  node.shutdownRequested = true;
  context.shutdown(node, seconds);
  return ok({ message: `Shutting Choria Server down after ${seconds}s` }, 'shutdown');
}

function releaseUpdate(node: SimulatedNode, data: Record<string, unknown>, context: ServerContext): AgentReply {
  if (node.state !== 'provisioning') return abort('Cannot update a server that is not in provisioning mode', 'release_update');
  // The JWT's `update` claim becomes the server's configuration, checked before the token.
  if (!context.allowUpdates) return abort('Version updates is not enabled in the configuration', 'release_update');
  const refused = tokenRefusal(node, data.token, 'release_update', context);
  if (refused !== undefined) return refused;
  const version = text(data.version);
  if (version === '' || context.failUpgrades) {
    context.note('upgrade-failed', node);
    return abort(
      `Update to version ${version} failed, release rolled back: ${version === '' ? 'no version given' : 'simulated failure'}`,
      'release_update',
    );
  }
  context.publishLifecycle(node, 'upgraded', { version: node.version, newVersion: version });
  node.upgrades.push(version);
  context.note('upgraded', node);
  context.restart(node, 2, version);
  return ok({ message: 'Restarting Choria Server after 2s' }, 'release_update');
}
