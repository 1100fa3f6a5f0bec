import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { Observable, Subject } from 'rxjs';
import { BadMessages } from '../lib/choria/badMessages';
import { StatusCode } from '../lib/choria/errors';
import { LifecycleFormat, LifecycleType, PROVISION_MODE_COMPONENT, SERVER_COMPONENT, lifecycleEventJson, lifecycleSubject, newLifecycleEvent } from '../lib/choria/lifecycle';
import { decodeRequest, encodeReply } from '../lib/choria/protocol/codec';
import { AgentReply, decodeAgentRequest, encodeAgentReply } from '../lib/choria/protocol/mcorpc';
import { PROVISIONING_COLLECTIVE } from '../lib/choria/protocol/subjects';
import { ChoriaRequest } from '../lib/choria/protocol/types';
import { Logger, silentLogger } from '../lib/logger';
import { FleetKeys, FleetKeysOptions, createFleetKeys } from '../lib/simulate/fleetKeys';
import { PROVISIONING_AGENTS, ServerContext, discoveryReply, handleRpc, leavesProvisioning, matchesFilter } from '../lib/simulate/serverAgents';
import { NodeRecord, SimulatedNode } from '../lib/simulate/simulatedNode';
import { SignedRequestPolicy, signedRequestRefusal } from '../lib/simulate/signedRequestCheck';

/** Options for {@link startSimulatedFleet}. */
export interface SimulatedFleetOptions {
  /** The one connection every simulated server shares; the fleet never closes it. */
  nc: NatsConnection;
  /** How many servers. */
  nodes: number;
  /** The identity of the i-th node (from 1). Default `node-<i>.example.net`. */
  identity?: (index: number) => string;
  /** The token built into the servers (the JWT's `cht`); empty: no check. Default empty. */
  token?: string;
  /** Startup events as CloudEvents (servers' default) or in the legacy Choria format. Default `cloudevents`. */
  lifecycleFormat?: LifecycleFormat;
  /** The lifecycle component while in provisioning mode. Default `provision_mode_server`. */
  component?: string;
  /** The servers' version (inventory and startup events). Default `0.29.4`. */
  version?: string;
  /** Inventory says `upgradable: true`, and the JWT allows `release_update`. Default false. */
  upgradable?: boolean;
  /** `release_update` fails and rolls back. */
  failUpgrades?: boolean;
  /** Nodes booting per second; 0 boots them all at once. Default 0. */
  bootRate?: number;
  /** Added before every reply, ms. Default 0. */
  latencyMs?: number;
  /** The fraction of RPCs (not discovery) answered with status 5 "simulated failure", doing nothing. Default 0. */
  failureRate?: number;
  /** The first N nodes never answer anything. Default 0. */
  silent?: number;
  /** Replaces the server's restart splay (2 s for the provisioner's `splay: 1`), ms. */
  restartDelayMs?: number;
  /** Replaces the server's shutdown delay (0-9 s), ms. */
  shutdownDelayMs?: number;
  /** How long a provisioning lock lasts and each locked call extends it. Default 2 minutes. */
  lockWindowMs?: number;
  /** Ready-made keys (share one set across test suites); otherwise made from `jwt`. */
  keys?: FleetKeys;
  /** How to make the keys when `keys` is not given (signing key, per-node keys). */
  jwt?: Omit<FleetKeysOptions, 'claims'> & { urls?: string[]; v2?: boolean };
  /** Randomness (failure injection, splays). Default `Math.random`. */
  random?: () => number;
  /** The clock of the provisioning lock, ms. Default `Date.now`. (Request TTLs use the wall clock.) */
  now?: () => number;
  collective?: string;
  /** Where a server keeps its configuration. Default `/etc/choria`. */
  configDir?: string;
  /**
   * Told of every request that reaches a node (discovery included), before it is answered, so a
   * test or benchmark can say who asked what and when (several provisioners on one fleet).
   */
  onRequest?: (request: RequestRecord) => void;
  /** Where malformed requests are counted and logged. */
  badMessages?: BadMessages;
  /**
   * Servers whose provisioning JWT says `chs: true`: every v1 request must be signed by a
   * certificate of this CA, as go-choria verifies it (`signedRequestRefusal`); any other is
   * dropped unanswered, logged and counted in `signatureRefusals`. Default: unsigned requests are
   * accepted, as provisioning mode's usual `chs: false` says.
   */
  requireSigned?: SignedRequestPolicy;
  logger?: Logger;
}

/** Counters of a fleet, as it runs. */
export interface FleetStats {
  nodes: number;
  booted: number;
  /** In provisioning mode now. */
  provisioning: number;
  /** Restarted as provisioned servers now. */
  provisioned: number;
  shutdown: number;
  silent: number;
  /** Successful configure calls. */
  configured: number;
  /** Configure calls on a node that had been configured before. */
  duplicates: number;
  /** Restarts that came back in provisioning mode. */
  provisioningLoops: number;
  upgraded: number;
  upgradeFailures: number;
  shutdownRequests: number;
  lockRefusals: number;
  tokenRefusals: number;
  injectedFailures: number;
  /** Requests that reached a node (RPCs and discovery). */
  requests: number;
  discoveryReplies: number;
  /** Malformed requests (counted and logged, not answered). */
  badRequests: number;
  /** Requests outside their TTL (dropped silently, as a server does). */
  staleRequests: number;
  /** Requests dropped because they were unsigned or their signature did not verify (`requireSigned`). */
  signatureRefusals: number;
}

/** One request a node received: from whom (`callerid`), for what, and when (`now()`, ms). */
export interface RequestRecord {
  identity: string;
  caller: string;
  agent: string;
  /** The action, or `ping` for discovery. */
  action: string;
  at: number;
}

/** Something that happened to a node. */
export interface FleetEvent {
  type: 'booted' | 'configured' | 'duplicate' | 'provisioned' | 'provisioning-loop' | 'upgraded' | 'upgrade-failed' | 'shutdown' | 'lock-refused' | 'token-refused' | 'failure-injected';
  identity: string;
}

/** A running fleet of simulated Choria servers. */
export interface SimulatedFleet {
  readonly keys: FleetKeys;
  /** What a provisioner's `jwt_verify_cert` must hold (hex ed25519 key, or RSA PEM). */
  readonly jwtVerifyKey: string;
  /** Every event as it happens. Completes on `stop()`. */
  readonly events$: Observable<FleetEvent>;
  /** The counters now. */
  stats(): FleetStats;
  /** One node's record. */
  node(identity: string): NodeRecord | undefined;
  /** Every node's record, in index order. */
  nodes(): NodeRecord[];
  /** Every identity, in index order. */
  identities(): string[];
  /**
   * Makes nodes stop answering: the first `count` that are in provisioning mode and still talking,
   * or the ones named. Returns the identities silenced.
   */
  silence(target: number | string[]): string[];
  /** Makes nodes answer again (all when none are named). */
  unsilence(identities?: string[]): void;
  /** Resolves once every node has booted. */
  whenBooted(): Promise<void>;
  /** Stops booting, restarting and answering, and unsubscribes. The connection stays open. */
  stop(): Promise<void>;
}

/**
 * Starts a fleet of Choria servers in provisioning mode on one NATS connection, speaking the wire
 * protocol as go-choria's server does (§3.4): a startup event when each boots (legacy or
 * CloudEvents), discovery answered while in provisioning mode, `rpcutil#inventory` and every
 * `choria_provision` action with the real reply fields and refusals (the token, the two-minute
 * per-caller lock), `restart` leaving provisioning mode when the written configuration says
 * `plugin.choria.server.provision=false` (then the node no longer answers on the provisioning
 * collective), `release_update` publishing `upgraded` and coming back in provisioning mode with the
 * new version. One wildcard subscription serves every node's direct subject, so tens of thousands
 * of nodes cost a map, not tens of thousands of subscriptions.
 */
export async function startSimulatedFleet(options: SimulatedFleetOptions): Promise<SimulatedFleet> {
  const {
    nc,
    token = '',
    lifecycleFormat = 'cloudevents',
    component = PROVISION_MODE_COMPONENT,
    version = '0.29.4',
    upgradable = false,
    failUpgrades = false,
    bootRate = 0,
    latencyMs = 0,
    failureRate = 0,
    lockWindowMs = 120_000,
    random = Math.random,
    now = Date.now,
    collective = PROVISIONING_COLLECTIVE,
    configDir = '/etc/choria',
    logger = silentLogger,
  } = options;
  const identity = options.identity ?? ((i: number) => `node-${i}.example.net`);
  const badMessages = options.badMessages ?? new BadMessages({ logger });
  // Refuses a component that would publish outside its own subject, before anything starts.
  lifecycleSubject('startup', component);

  const keys =
    options.keys ??
    (await createFleetKeys({ ...options.jwt, claims: { token, urls: options.jwt?.urls, allowUpdates: upgradable, v2: options.jwt?.v2, secure: options.requireSigned !== undefined } }));

  const nodes = new Map<string, SimulatedNode>();
  const order: SimulatedNode[] = [];
  for (let i = 1; i <= options.nodes; i++) {
    const node = new SimulatedNode(identity(i), version);
    if (nodes.has(node.identity)) throw new Error(`duplicate identity ${node.identity}`);
    nodes.set(node.identity, node);
    order.push(node);
  }
  for (const node of order.slice(0, options.silent ?? 0)) node.silent = true;

  const events = new Subject<FleetEvent>();
  const counters = {
    configured: 0,
    duplicates: 0,
    provisioningLoops: 0,
    upgraded: 0,
    upgradeFailures: 0,
    shutdownRequests: 0,
    lockRefusals: 0,
    tokenRefusals: 0,
    injectedFailures: 0,
    requests: 0,
    discoveryReplies: 0,
    badRequests: 0,
    staleRequests: 0,
    signatureRefusals: 0,
  };
  const timers = new Set<NodeJS.Timeout>();
  let stopped = false;
  const emit = (type: FleetEvent['type'], node: SimulatedNode): void => events.next({ type, identity: node.identity });

  const later = (ms: number, work: () => void): void => {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stopped) work();
    }, ms);
    timers.add(timer);
  };

  const publish = (subject: string, body: string): void => {
    if (stopped || nc.isClosed()) return;
    try {
      nc.publish(subject, body);
    } catch (error) {
      logger.warn({ err: error, subject }, 'could not publish');
    }
  };

  const publishLifecycle = (node: SimulatedNode, type: LifecycleType, fields: { version?: string; newVersion?: string; component?: string } = {}): void => {
    const eventComponent = fields.component ?? component;
    const event = newLifecycleEvent(type, { identity: node.identity, component: eventComponent, ...(fields.version !== undefined ? { version: fields.version } : {}), ...(fields.newVersion !== undefined ? { newVersion: fields.newVersion } : {}) });
    publish(lifecycleSubject(type, eventComponent), lifecycleEventJson(event, lifecycleFormat));
  };

  const boot = (node: SimulatedNode): void => {
    node.state = 'provisioning';
    node.boots++;
    publishLifecycle(node, 'startup', { version: node.version });
    emit('booted', node);
  };

  // A restart: go-choria publishes `shutdown`, waits the splay, then execs itself; the new process
  // has a new ECDH key (none until the next jwt call) and no lock.
  const reboot = (node: SimulatedNode, upgradeTo?: string): void => {
    node.restartPending = false;
    node.ecdh = undefined;
    node.lock = undefined;
    node.boots++;
    if (upgradeTo !== undefined) {
      node.version = upgradeTo;
      publishLifecycle(node, 'startup', { version: node.version });
    } else if (leavesProvisioning(node.configuration)) {
      node.state = 'provisioned';
      node.provisioned++;
      publishLifecycle(node, 'startup', { version: node.version, component: SERVER_COMPONENT });
      emit('provisioned', node);
    } else {
      node.provisioningLoops++;
      counters.provisioningLoops++;
      publishLifecycle(node, 'startup', { version: node.version });
      emit('provisioning-loop', node);
    }
  };

  const context: ServerContext = {
    token,
    keys,
    upgradable,
    allowUpdates: upgradable,
    failUpgrades,
    configFile: `${configDir}/server.conf`,
    configDir,
    lockWindowMs,
    now,
    random,
    publishLifecycle: (node, type, fields) => publishLifecycle(node, type, fields),
    restart: (node, seconds, upgradeTo) => {
      if (node.restartPending) return;
      node.restartPending = true;
      later(0, () => publishLifecycle(node, 'shutdown'));
      later(options.restartDelayMs ?? seconds * 1000, () => reboot(node, upgradeTo));
    },
    shutdown: (node, seconds) => {
      counters.shutdownRequests++;
      later(options.shutdownDelayMs ?? seconds * 1000, () => {
        publishLifecycle(node, 'shutdown');
        node.state = 'shutdown';
        emit('shutdown', node);
      });
    },
    note: (event, node) => {
      if (event === 'configured') {
        counters.configured++;
        if (node.configured > 1) {
          counters.duplicates++;
          emit('duplicate', node);
        }
      } else if (event === 'lock-refused') counters.lockRefusals++;
      else if (event === 'token-refused') counters.tokenRefusals++;
      else if (event === 'upgraded') counters.upgraded++;
      else counters.upgradeFailures++;
      emit(event, node);
    },
  };

  const send = (node: SimulatedNode, request: ChoriaRequest, payload: string): void => {
    publish(request.replyTo, encodeReply({ requestId: request.requestId, senderId: node.identity, agent: request.agent, time: Date.now(), payload }, request.version));
  };

  const answerRpc = (node: SimulatedNode, request: ChoriaRequest, rpc: { agent: string; action: string; data: Record<string, unknown> }): void => {
    const run = (): void => {
      if (node.state !== 'provisioning' || node.silent) return;
      if (failureRate > 0 && random() < failureRate) {
        counters.injectedFailures++;
        emit('failure-injected', node);
        send(node, request, encodeAgentReply({ statuscode: StatusCode.UnknownError, statusmsg: 'simulated failure', data: {}, action: rpc.action }));
        return;
      }
      let outcome: AgentReply | Promise<AgentReply> | undefined;
      try {
        outcome = handleRpc(node, request, rpc, context);
      } catch (error) {
        logger.error({ err: error, identity: node.identity, agent: rpc.agent, action: rpc.action }, 'simulated agent failed');
        outcome = { statuscode: StatusCode.UnknownError, statusmsg: 'internal error', data: {}, action: rpc.action };
      }
      if (outcome === undefined) return;
      if (outcome instanceof Promise) void outcome.then((reply) => send(node, request, encodeAgentReply(reply)));
      else send(node, request, encodeAgentReply(outcome));
    };
    if (latencyMs > 0) later(latencyMs, run);
    else run();
  };

  const answer = (node: SimulatedNode, request: ChoriaRequest, subject: string): void => {
    counters.requests++;
    if (request.agent === 'discovery') {
      options.onRequest?.({ identity: node.identity, caller: request.callerId, agent: request.agent, action: 'ping', at: now() });
      const pong = discoveryReply(request.payload);
      if (pong === undefined) return;
      counters.discoveryReplies++;
      if (latencyMs > 0) later(latencyMs, () => send(node, request, pong));
      else send(node, request, pong);
      return;
    }
    const rpc = decodeAgentRequest(request.payload);
    if (!rpc.ok) {
      counters.badRequests++;
      badMessages.report('request', rpc.error, subject);
      return;
    }
    options.onRequest?.({ identity: node.identity, caller: request.callerId, agent: rpc.value.agent, action: rpc.value.action, at: now() });
    answerRpc(node, request, rpc.value);
  };

  const decode = (msg: Msg): ChoriaRequest | undefined => {
    const decoded = decodeRequest(msg.data);
    if (decoded.ok) {
      if (decoded.value.collective !== collective) return undefined;
      const refusal = options.requireSigned === undefined ? undefined : signedRequestRefusal(decoded.value, options.requireSigned);
      if (refusal === undefined) return decoded.value;
      counters.signatureRefusals++;
      logger.warn({ subject: msg.subject, caller: decoded.value.callerId }, `SecureRequest message did not pass security validation: ${refusal}`);
      return undefined;
    }
    if (decoded.error.reason === 'stale') {
      counters.staleRequests++;
      logger.debug({ subject: msg.subject }, decoded.error.message);
    } else {
      counters.badRequests++;
      badMessages.report('request', decoded.error, msg.subject);
    }
    return undefined;
  };

  const listening = (node: SimulatedNode | undefined): node is SimulatedNode => node !== undefined && node.state === 'provisioning' && !node.silent;

  const directPrefix = `${collective}.node.`;
  const subscriptions: Subscription[] = [
    nc.subscribe(`${collective}.node.>`, {
      callback: (error, msg) => {
        if (error !== null || stopped) return;
        const node = nodes.get(msg.subject.slice(directPrefix.length));
        if (!listening(node)) return;
        const request = decode(msg);
        if (request === undefined || !matchesFilter(node, request.filter)) return;
        answer(node, request, msg.subject);
      },
    }),
    ...PROVISIONING_AGENTS.map((agent) =>
      nc.subscribe(`${collective}.broadcast.agent.${agent}`, {
        callback: (error, msg) => {
          if (error !== null || stopped) return;
          const request = decode(msg);
          if (request === undefined) return;
          for (const node of order) if (listening(node) && matchesFilter(node, request.filter)) answer(node, request, msg.subject);
        },
      }),
    ),
  ];
  await nc.flush();

  let booted = 0;
  let resolveBooted!: () => void;
  const allBooted = new Promise<void>((resolve) => (resolveBooted = resolve));
  const bootNext = (count: number): void => {
    for (let n = 0; n < count && booted < order.length; n++) boot(order[booted++]);
    if (booted === order.length) resolveBooted();
  };
  let bootTimer: NodeJS.Timeout | undefined;
  if (bootRate <= 0) bootNext(order.length);
  else {
    // Ten batches a second; the fractional remainder carries over, so any rate is honoured on average.
    let owed = 0;
    const tick = (): void => {
      owed += bootRate / 10;
      const whole = Math.floor(owed);
      owed -= whole;
      bootNext(whole);
      if (booted === order.length && bootTimer !== undefined) clearInterval(bootTimer);
    };
    bootTimer = setInterval(tick, 100);
    tick();
  }

  const fleet: SimulatedFleet = {
    keys,
    jwtVerifyKey: keys.jwtVerifyKey,
    events$: events.asObservable(),
    stats() {
      let provisioning = 0;
      let provisioned = 0;
      let shutdown = 0;
      let silent = 0;
      for (const node of order) {
        if (node.state === 'provisioning') provisioning++;
        else if (node.state === 'provisioned') provisioned++;
        else if (node.state === 'shutdown') shutdown++;
        if (node.silent) silent++;
      }
      return { nodes: order.length, booted, provisioning, provisioned, shutdown, silent, ...counters };
    },
    node: (id) => nodes.get(id)?.record(),
    nodes: () => order.map((node) => node.record()),
    identities: () => order.map((node) => node.identity),
    silence(target) {
      const chosen = typeof target === 'number' ? order.filter((node) => node.state === 'provisioning' && !node.silent).slice(0, target) : target.map((id) => nodes.get(id)).filter((node): node is SimulatedNode => node !== undefined);
      for (const node of chosen) node.silent = true;
      return chosen.map((node) => node.identity);
    },
    unsilence(identities) {
      for (const node of identities === undefined ? order : identities.map((id) => nodes.get(id))) if (node !== undefined) node.silent = false;
    },
    whenBooted: () => allBooted,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (bootTimer !== undefined) clearInterval(bootTimer);
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const subscription of subscriptions) if (!subscription.isClosed()) subscription.unsubscribe();
      events.complete();
      if (options.badMessages === undefined) badMessages.close();
      if (!nc.isClosed()) await nc.flush().catch(() => undefined);
    },
  };
  return fleet;
}
