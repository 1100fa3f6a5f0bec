import { SimulatedNode } from '../../lib/simulate/simulatedNode';

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
  /** Configure calls on a node that had been configured before (by anyone, the same caller included). */
  duplicates: number;
  /**
   * Nodes configured by two or more different callers (`callerid`): what active-active must never
   * do. A node counts once, when a second caller's configure succeeds.
   */
  configuredByTwo: number;
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
  type:
    | 'booted'
    | 'configured'
    | 'duplicate'
    | 'configured-by-two'
    | 'provisioned'
    | 'provisioning-loop'
    | 'upgraded'
    | 'upgrade-failed'
    | 'shutdown'
    | 'lock-refused'
    | 'token-refused'
    | 'failure-injected';
  identity: string;
}

/** The part of {@link FleetStats} counted as things happen; the rest is read off the nodes. */
export type FleetCounters = Omit<FleetStats, 'nodes' | 'booted' | 'provisioning' | 'provisioned' | 'shutdown' | 'silent'>;

/** Every counter at zero, in the order {@link fleetStats} lists them. */
export function newFleetCounters(): FleetCounters {
  return {
    configured: 0,
    duplicates: 0,
    configuredByTwo: 0,
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
}

/**
 * The fleet's statistics now: the node states counted over `nodes` (a fresh object on every call,
 * so a caller may keep it), then a copy of the counters.
 */
export function fleetStats(nodes: readonly SimulatedNode[], booted: number, counters: FleetCounters): FleetStats {
  let provisioning = 0;
  let provisioned = 0;
  let shutdown = 0;
  let silent = 0;
  for (const node of nodes) {
    if (node.state === 'provisioning') provisioning++;
    else if (node.state === 'provisioned') provisioned++;
    else if (node.state === 'shutdown') shutdown++;
    if (node.silent) silent++;
  }
  return { nodes: nodes.length, booted, provisioning, provisioned, shutdown, silent, ...counters };
}
