import { Observable, SchedulerLike, map } from 'rxjs';
import { collectUntilIdle } from '@rxfleet/operators';
import { newFilter } from '../../lib/choria/protocol/types';
import { ChoriaRpcClient } from './rpcClient';
import { definedFields } from '../../lib/definedFields';

/** Options for {@link broadcastDiscovery}. */
export interface BroadcastDiscoveryOptions {
  /** Only nodes hosting (and running) this agent answer. Default `choria_provision`: nodes in provisioning mode. */
  agent?: string;
  /** The sliding window: collection ends this long after the last reply. Default 300 ms. */
  idleMs?: number;
  /** Collection ends this long after the request whatever still arrives. Default 2 s. */
  timeoutMs?: number;
  /** Times the window. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/**
 * go-choria's broadcast discovery with a sliding window, as the provisioner runs it (§2.1): the
 * `discovery` agent's `ping` (base64 `cGluZw==`) to `<collective>.broadcast.agent.discovery`,
 * filtered on the agent, replies gathered until 300 ms pass without one or 2 s after asking.
 * Emits once the identities that answered, from the replies' transport headers (`mc_sender` in v1,
 * `sender` in v2), each once in the order first heard, then completes. Nobody listening (NATS's
 * no-responders) yields `[]` at once. Malformed replies are counted by the client and skipped.
 * Each subscription is one discovery round.
 */
export function broadcastDiscovery(client: ChoriaRpcClient, options: BroadcastDiscoveryOptions = {}): Observable<string[]> {
  const { agent = 'choria_provision', idleMs = 300, timeoutMs = 2000, scheduler } = options;
  return client.broadcast('discovery', 'ping', { filter: newFilter({ agent: [agent] }), payloadEncoding: 'base64' }).pipe(
    map((reply) => reply.sender),
    collectUntilIdle({ idle: idleMs, timeout: timeoutMs, ...definedFields({ scheduler }) }),
    map((senders) => [...new Set(senders)]),
  );
}
