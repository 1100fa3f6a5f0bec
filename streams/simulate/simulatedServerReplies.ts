import type { Msg } from '@nats-io/transport-node';
import { BadMessages } from '../../lib/choria/badMessages';
import { StatusCode } from '../../lib/choria/errors';
import { decodeRequest, encodeReply } from '../../lib/choria/protocol/codec';
import { AgentReply, decodeAgentRequest, encodeAgentReply } from '../../lib/choria/protocol/mcorpc';
import { ChoriaRequest } from '../../lib/choria/protocol/types';
import { Logger } from '../../lib/logger';
import { FleetKeys } from '../../lib/simulate/fleetKeys';
import { ServerContext, discoveryReply, handleRpc } from '../../lib/simulate/serverAgents';
import { SimulatedNode } from '../../lib/simulate/simulatedNode';
import { SignedRequestPolicy, signedRequestRefusal } from '../../lib/simulate/signedRequestCheck';
import { SimulatedFleetRuntime } from './simulatedFleetRuntime';
import { RequestRecord } from './simulatedFleetStats';
import { SimulatedServerLifecycle } from './simulatedServerLifecycle';

/** What the servers' answers depend on: the fleet's options (`SimulatedFleetOptions`) with their defaults filled in. */
export interface ServerReplySettings {
  token: string;
  keys: FleetKeys;
  upgradable: boolean;
  failUpgrades: boolean;
  configDir: string;
  lockWindowMs: number;
  latencyMs: number;
  failureRate: number;
  random: () => number;
  now: () => number;
  collective: string;
  requireSigned?: SignedRequestPolicy;
  onRequest?: (request: RequestRecord) => void;
  badMessages: BadMessages;
  logger: Logger;
}

/**
 * How a fleet's servers answer what reaches them, as go-choria's server does: a request is first
 * decoded and vetted ({@link decode}: the collective, the TTL, the signature when required), then
 * answered by one node ({@link answer}): discovery with its pong, an RPC through the simulated
 * agents, after the configured latency, with the configured share of injected failures. A request
 * the node cannot parse is counted and reported, never answered; an agent that throws answers
 * `internal error`, so one bad request never stops the fleet.
 */
export class SimulatedServerReplies {
  private readonly context: ServerContext;

  constructor(
    private readonly runtime: SimulatedFleetRuntime,
    lifecycle: SimulatedServerLifecycle,
    private readonly settings: ServerReplySettings,
  ) {
    const { counters } = runtime;
    this.context = {
      token: settings.token,
      keys: settings.keys,
      upgradable: settings.upgradable,
      allowUpdates: settings.upgradable,
      failUpgrades: settings.failUpgrades,
      configFile: `${settings.configDir}/server.conf`,
      configDir: settings.configDir,
      lockWindowMs: settings.lockWindowMs,
      now: settings.now,
      random: settings.random,
      publishLifecycle: (node, type, fields) => lifecycle.publish(node, type, fields),
      restart: (node, seconds, upgradeTo) => lifecycle.restart(node, seconds, upgradeTo),
      shutdown: (node, seconds) => lifecycle.shutdown(node, seconds),
      note: (event, node) => {
        if (event === 'configured') {
          counters.configured++;
          if (node.configured > 1) {
            counters.duplicates++;
            runtime.emit('duplicate', node);
          }
        } else if (event === 'configured-by-two') counters.configuredByTwo++;
        else if (event === 'lock-refused') counters.lockRefusals++;
        else if (event === 'token-refused') counters.tokenRefusals++;
        else if (event === 'upgraded') counters.upgraded++;
        else counters.upgradeFailures++;
        runtime.emit(event, node);
      },
    };
  }

  /**
   * The request a message carries, when a server would act on it: undefined (and counted) when it is
   * for another collective, malformed, stale, or refused by the signature check.
   */
  decode(msg: Msg): ChoriaRequest | undefined {
    const { counters } = this.runtime;
    const { collective, requireSigned, logger, badMessages } = this.settings;
    const decoded = decodeRequest(msg.data);
    if (decoded.ok) {
      if (decoded.value.collective !== collective) return undefined;
      const refusal = requireSigned === undefined ? undefined : signedRequestRefusal(decoded.value, requireSigned);
      if (refusal === undefined) return decoded.value;
      counters.signatureRefusals++;
      logger.warn(
        { subject: msg.subject, caller: decoded.value.callerId },
        `SecureRequest message did not pass security validation: ${refusal}`,
      );
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
  }

  /** One node answers one vetted request that arrived on `subject` (told to `onRequest` first). */
  answer(node: SimulatedNode, request: ChoriaRequest, subject: string): void {
    const { counters } = this.runtime;
    const { latencyMs, onRequest, now, badMessages } = this.settings;
    counters.requests++;
    if (request.agent === 'discovery') {
      onRequest?.({ identity: node.identity, caller: request.callerId, agent: request.agent, action: 'ping', at: now() });
      const pong = discoveryReply(request.payload);
      if (pong === undefined) return;
      counters.discoveryReplies++;
      if (latencyMs > 0) this.runtime.later(latencyMs, () => this.send(node, request, pong));
      else this.send(node, request, pong);
      return;
    }
    const rpc = decodeAgentRequest(request.payload);
    if (!rpc.ok) {
      counters.badRequests++;
      badMessages.report('request', rpc.error, subject);
      return;
    }
    onRequest?.({ identity: node.identity, caller: request.callerId, agent: rpc.value.agent, action: rpc.value.action, at: now() });
    this.answerRpc(node, request, rpc.value);
  }

  private answerRpc(
    node: SimulatedNode,
    request: ChoriaRequest,
    rpc: { agent: string; action: string; data: Record<string, unknown> },
  ): void {
    const { latencyMs, failureRate, random, logger } = this.settings;
    const run = (): void => {
      // The node may have restarted, shut down or been silenced during the latency.
      if (node.state !== 'provisioning' || node.silent) return;
      if (failureRate > 0 && random() < failureRate) {
        this.runtime.counters.injectedFailures++;
        this.runtime.emit('failure-injected', node);
        this.send(
          node,
          request,
          encodeAgentReply({ statuscode: StatusCode.UnknownError, statusmsg: 'simulated failure', data: {}, action: rpc.action }),
        );
        return;
      }
      let outcome: AgentReply | Promise<AgentReply> | undefined;
      try {
        outcome = handleRpc(node, request, rpc, this.context);
      } catch (error) {
        logger.error({ err: error, identity: node.identity, agent: rpc.agent, action: rpc.action }, 'simulated agent failed');
        outcome = { statuscode: StatusCode.UnknownError, statusmsg: 'internal error', data: {}, action: rpc.action };
      }
      if (outcome === undefined) return;
      if (outcome instanceof Promise) void outcome.then((reply) => this.send(node, request, encodeAgentReply(reply)));
      else this.send(node, request, encodeAgentReply(outcome));
    };
    if (latencyMs > 0) this.runtime.later(latencyMs, run);
    else run();
  }

  private send(node: SimulatedNode, request: ChoriaRequest, payload: string): void {
    const broker = this.runtime.connectedServer();
    this.runtime.publish(
      request.replyTo,
      encodeReply(
        { requestId: request.requestId, senderId: node.identity, agent: request.agent, time: Date.now(), payload },
        request.version,
        [[broker, node.identity, broker]],
      ),
    );
  }
}
