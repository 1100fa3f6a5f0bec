import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { Observable } from 'rxjs';
import { BadMessages } from '../../lib/choria/badMessages';
import { LifecycleFormat, PROVISION_MODE_COMPONENT, lifecycleSubject } from '../../lib/choria/lifecycle';
import { PROVISIONING_COLLECTIVE } from '../../lib/choria/protocol/subjects';
import { Logger, silentLogger } from '../../lib/logger';
import { FleetKeys, FleetKeysOptions, createFleetKeys } from '../../lib/simulate/fleetKeys';
import { PROVISIONING_AGENTS, matchesFilter } from '../../lib/simulate/serverAgents';
import { NodeRecord, SimulatedNode } from '../../lib/simulate/simulatedNode';
import { SignedRequestPolicy } from '../../lib/simulate/signedRequestCheck';
import { FleetBootSchedule } from './simulatedFleetBoot';
import { SimulatedFleetRuntime } from './simulatedFleetRuntime';
import { FleetEvent, FleetStats, RequestRecord, fleetStats } from './simulatedFleetStats';
import { SimulatedServerLifecycle } from './simulatedServerLifecycle';
import { SimulatedServerReplies } from './simulatedServerReplies';
import { definedFields } from '../../lib/definedFields';

export type { FleetEvent, FleetStats, RequestRecord } from './simulatedFleetStats';

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
    (await createFleetKeys({
      ...options.jwt,
      claims: {
        token,
        urls: options.jwt?.urls,
        allowUpdates: upgradable,
        v2: options.jwt?.v2,
        secure: options.requireSigned !== undefined,
      },
    }));

  const { nodes, order } = createNodes(options.nodes, identity, version, options.silent ?? 0);

  const runtime = new SimulatedFleetRuntime(nc, logger);
  const lifecycle = new SimulatedServerLifecycle(runtime, {
    lifecycleFormat,
    component,
    ...definedFields({ restartDelayMs: options.restartDelayMs, shutdownDelayMs: options.shutdownDelayMs }),
  });
  const replies = new SimulatedServerReplies(runtime, lifecycle, {
    token,
    keys,
    upgradable,
    failUpgrades,
    configDir,
    lockWindowMs,
    latencyMs,
    failureRate,
    random,
    now,
    collective,
    ...definedFields({ requireSigned: options.requireSigned, onRequest: options.onRequest }),
    badMessages,
    logger,
  });

  const subscriptions = subscribeServers(nc, collective, { nodes, order }, replies, runtime);
  await nc.flush();

  const booting = new FleetBootSchedule(order, bootRate, (node) => lifecycle.boot(node));

  const fleet: SimulatedFleet = {
    keys,
    jwtVerifyKey: keys.jwtVerifyKey,
    events$: runtime.events.asObservable(),
    stats: () => fleetStats(order, booting.booted, runtime.counters),
    node: (id) => nodes.get(id)?.record(),
    nodes: () => order.map((node) => node.record()),
    identities: () => order.map((node) => node.identity),
    silence: (target) => silenceNodes({ nodes, order }, target),
    unsilence: (identities) => unsilenceNodes({ nodes, order }, identities),
    whenBooted: () => booting.allBooted,
    async stop() {
      if (runtime.stopped) return;
      runtime.stop();
      booting.stop();
      for (const subscription of subscriptions) if (!subscription.isClosed()) subscription.unsubscribe();
      runtime.events.complete();
      if (options.badMessages === undefined) badMessages.close();
      if (!nc.isClosed()) await nc.flush().catch(() => undefined);
    },
  };
  return fleet;
}

/** The fleet's nodes by identity, and in index order (from 1). */
interface FleetNodes {
  readonly nodes: ReadonlyMap<string, SimulatedNode>;
  readonly order: readonly SimulatedNode[];
}

/** Makes `count` nodes, each with its own identity; the first `silent` never answer. */
function createNodes(count: number, identity: (index: number) => string, version: string, silent: number): FleetNodes {
  const nodes = new Map<string, SimulatedNode>();
  const order: SimulatedNode[] = [];
  for (let i = 1; i <= count; i++) {
    const node = new SimulatedNode(identity(i), version);
    if (nodes.has(node.identity)) throw new Error(`duplicate identity ${node.identity}`);
    nodes.set(node.identity, node);
    order.push(node);
  }
  for (const node of order.slice(0, silent)) node.silent = true;
  return { nodes, order };
}

/** Silences the first `count` nodes in provisioning mode and still talking, or the ones named; returns their identities. */
function silenceNodes({ nodes, order }: FleetNodes, target: number | string[]): string[] {
  const chosen =
    typeof target === 'number'
      ? order.filter((node) => node.state === 'provisioning' && !node.silent).slice(0, target)
      : target.map((id) => nodes.get(id)).filter((node): node is SimulatedNode => node !== undefined);
  for (const node of chosen) node.silent = true;
  return chosen.map((node) => node.identity);
}

/** Makes the nodes named (all when none are) answer again. */
function unsilenceNodes({ nodes, order }: FleetNodes, identities: string[] | undefined): void {
  for (const node of identities === undefined ? order : identities.map((id) => nodes.get(id))) if (node !== undefined) node.silent = false;
}

/**
 * Where requests reach the servers: one wildcard subscription for every node's direct subject, and
 * one per provisioning agent for broadcasts. A request is answered by each node it is meant for
 * that is in provisioning mode, not silenced, and matches its filter.
 */
function subscribeServers(
  nc: NatsConnection,
  collective: string,
  { nodes, order }: FleetNodes,
  replies: SimulatedServerReplies,
  runtime: SimulatedFleetRuntime,
): Subscription[] {
  const listening = (node: SimulatedNode | undefined): node is SimulatedNode =>
    node !== undefined && node.state === 'provisioning' && !node.silent;

  const directPrefix = `${collective}.node.`;
  return [
    nc.subscribe(`${collective}.node.>`, {
      callback: (error, msg) => {
        if (error !== null || runtime.stopped) return;
        const node = nodes.get(msg.subject.slice(directPrefix.length));
        if (!listening(node)) return;
        const request = replies.decode(msg);
        if (request === undefined || !matchesFilter(node, request.filter)) return;
        replies.answer(node, request, msg.subject);
      },
    }),
    ...PROVISIONING_AGENTS.map((agent) =>
      nc.subscribe(`${collective}.broadcast.agent.${agent}`, {
        callback: (error, msg) => {
          if (error !== null || runtime.stopped) return;
          const request = replies.decode(msg);
          if (request === undefined) return;
          for (const node of order) if (listening(node) && matchesFilter(node, request.filter)) replies.answer(node, request, msg.subject);
        },
      }),
    ),
  ];
}
