import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { Observable, SchedulerLike, asyncScheduler } from 'rxjs';
import { ActionSpec, DEFAULT_DISCOVERY_TIMEOUT_SECONDS, attemptTimeoutMs, replyDataErrors } from '../../lib/choria/agents';
import { BadMessages } from '../../lib/choria/badMessages';
import {
  MalformedReplyError,
  NoRespondersError,
  PROVISIONING_LOCK_MESSAGE,
  ProtocolError,
  ProvisioningLockError,
  RpcAbortedError,
  RpcStatusError,
  RpcTimeoutError,
  StatusCode,
} from '../../lib/choria/errors';
import { DEFAULT_MAX_BYTES, EncodeRequestOptions, decodeReply, encodeRequest } from '../../lib/choria/protocol/codec';
import { decodeAgentReply, encodeAgentRequest } from '../../lib/choria/protocol/mcorpc';
import { PROVISIONING_COLLECTIVE, broadcastSubject, callerIdFor, directSubject, newRequestId, replyPrefix } from '../../lib/choria/protocol/subjects';
import { ChoriaReply, Filter, ProtocolVersion, newFilter } from '../../lib/choria/protocol/types';
import { Logger, silentLogger } from '../../lib/logger';
import { ReplyInbox } from './replyInbox';

/** A successful RPC reply (status 0). */
export interface RpcReply<T = unknown> {
  /** The replying node (transport header). */
  sender: string;
  requestId: string;
  statuscode: number;
  statusmsg: string;
  data: T;
  version: ProtocolVersion;
}

/** Options for {@link ChoriaRpcClient}. */
export interface ChoriaRpcClientOptions {
  /** The daemon's one connection; the client never closes it. */
  nc: NatsConnection;
  /** This client's identity (the requests' sender id). */
  identity: string;
  /** Who the requests come from; its MD5 names the reply subjects. Default `choria=<identity>`. */
  callerId?: string;
  /** Default `provisioning`. */
  collective?: string;
  /** The protocol to speak. Default v1, unsigned (`insecure`), as provisioning mode expects. */
  protocol?: EncodeRequestOptions;
  /** Request validity in seconds. Default 60 (choria.cfg `ttl`). */
  ttl?: number;
  /** choria.cfg `discovery_timeout`, in seconds: added to the agent's DDL timeout per attempt. Default 2. */
  discoveryTimeoutSeconds?: number;
  /** Times the per-attempt timeouts. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /** Where malformed replies are counted and logged; share one across a daemon. */
  badMessages?: BadMessages;
  /** Replies larger than this are refused unread. Default 1 MiB. */
  maxBytes?: number;
  /** The clock requests are stamped with, ms. Default `Date.now`. */
  now?: () => number;
  logger?: Logger;
}

/** Options for one attempt. */
export interface RequestOptions {
  /** Cancels the attempt: it errors with {@link RpcAbortedError} carrying the signal's reason. */
  signal?: AbortSignal;
  /** Default: discovery timeout + the agent's DDL timeout (22 s choria_provision, 4 s rpcutil). */
  timeoutMs?: number;
}

/**
 * Choria RPC over the daemon's one NATS connection: direct requests to one node, and broadcasts.
 * Requests are published to `<collective>.node.<identity>` with the reply subject in the transport
 * header (and as the NATS reply, so a node nobody serves is reported at once by the server's
 * no-responders status instead of after the whole timeout). Every reply is decoded and validated;
 * a malformed one is counted and logged once in `badMessages`.
 */
export class ChoriaRpcClient {
  readonly identity: string;
  readonly callerId: string;
  readonly collective: string;
  readonly badMessages: BadMessages;
  private readonly nc: NatsConnection;
  private readonly inbox: ReplyInbox;
  private readonly protocol: EncodeRequestOptions;
  private readonly ttl: number;
  private readonly discoveryTimeoutSeconds: number;
  private readonly scheduler: SchedulerLike;
  private readonly maxBytes: number;
  private readonly now: () => number;
  private readonly logger: Logger;

  constructor(options: ChoriaRpcClientOptions) {
    this.nc = options.nc;
    this.identity = options.identity;
    this.callerId = options.callerId ?? callerIdFor(options.identity);
    this.collective = options.collective ?? PROVISIONING_COLLECTIVE;
    this.protocol = options.protocol ?? { version: 'v1' };
    this.ttl = options.ttl ?? 60;
    this.discoveryTimeoutSeconds = options.discoveryTimeoutSeconds ?? DEFAULT_DISCOVERY_TIMEOUT_SECONDS;
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    this.badMessages = options.badMessages ?? new BadMessages({ logger: this.logger });
    this.inbox = new ReplyInbox(this.nc, replyPrefix(this.collective, this.callerId), this.logger);
  }

  /** The per-attempt timeout for `agent`, ms. */
  timeoutMs(agent: string): number {
    return attemptTimeoutMs(agent, this.discoveryTimeoutSeconds);
  }

  /** Requests waiting for a reply now. */
  get pending(): number {
    return this.inbox.pending;
  }

  /**
   * One attempt of `agent#action` against one node, as an Observable of its reply: it emits the
   * reply and completes, or errors with {@link RpcStatusError} (a non-zero status; a
   * {@link ProvisioningLockError} for the lock refusal), {@link RpcTimeoutError},
   * {@link NoRespondersError}, {@link MalformedReplyError} or {@link RpcAbortedError}.
   * Nothing is sent until subscription; unsubscribing stops waiting (the request is already out).
   */
  request(identity: string, agent: string, action: string, data: object, options: RequestOptions = {}): Observable<RpcReply> {
    const rpc = `${agent}#${action}`;
    return new Observable<RpcReply>((subscriber) => {
      const { signal, timeoutMs = this.timeoutMs(agent) } = options;
      if (signal?.aborted) {
        subscriber.error(new RpcAbortedError(rpc, signal.reason));
        return;
      }
      const requestId = newRequestId();
      const stopListening = this.inbox.listen(requestId, (msg) => {
        const outcome = this.interpret(msg, rpc, identity, requestId);
        if (outcome instanceof Error) subscriber.error(outcome);
        else {
          subscriber.next(outcome);
          subscriber.complete();
        }
      });
      const onAbort = (): void => subscriber.error(new RpcAbortedError(rpc, signal?.reason));
      signal?.addEventListener('abort', onAbort, { once: true });
      const timer = this.scheduler.schedule(() => subscriber.error(new RpcTimeoutError(rpc, identity, timeoutMs)), timeoutMs);
      subscriber.add(() => {
        stopListening();
        timer.unsubscribe();
        signal?.removeEventListener('abort', onAbort);
      });
      try {
        this.publish(directSubject(this.collective, identity), requestId, agent, encodeAgentRequest(agent, action, data), newFilter({ agent: [agent] }), 'raw');
      } catch (error) {
        subscriber.error(error);
      }
    });
  }

  /**
   * One attempt of a provisioning RPC with typed input and output: as {@link request}, and the
   * reply data must pass the action's schema (DDL defaults filled in), else {@link MalformedReplyError}.
   */
  call<I extends object, O>(spec: ActionSpec<I, O>, identity: string, input: I, options: RequestOptions = {}): Observable<RpcReply<O>> {
    return new Observable<RpcReply<O>>((subscriber) =>
      this.request(identity, spec.agent, spec.action, input, options).subscribe({
        next: (reply) => {
          if (spec.validate(reply.data)) {
            subscriber.next(reply as RpcReply<O>);
            return;
          }
          const error = new ProtocolError('payload', 'agent', `${spec.rpc} reply data: ${replyDataErrors(spec.validate)}`);
          this.badMessages.report('reply', error, this.inbox.subject(reply.requestId));
          subscriber.error(new MalformedReplyError(spec.rpc, identity, error));
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      }),
    );
  }

  /**
   * A broadcast request to every node hosting `agent` (`<collective>.broadcast.agent.<agent>`),
   * as an Observable of every valid reply, until unsubscribed. It completes at once when NATS says
   * nobody listens on the subject (no responders means no nodes, not an error). Malformed replies
   * are counted and skipped.
   */
  broadcast(agent: string, payload: string, options: { filter?: Filter; payloadEncoding?: 'raw' | 'base64' } = {}): Observable<ChoriaReply> {
    return new Observable<ChoriaReply>((subscriber) => {
      const requestId = newRequestId();
      subscriber.add(
        this.inbox.listen(requestId, (msg) => {
          if (isNoResponders(msg)) {
            subscriber.complete();
            return;
          }
          const decoded = decodeReply(msg.data, { maxBytes: this.maxBytes });
          if (!decoded.ok) {
            this.badMessages.report('broadcast_reply', decoded.error, msg.subject);
            return;
          }
          if (decoded.value.requestId !== requestId) {
            this.badMessages.report('broadcast_reply', new ProtocolError('schema', 'reply', 'request id does not match the reply subject'), msg.subject);
            return;
          }
          subscriber.next(decoded.value);
        }),
      );
      try {
        this.publish(broadcastSubject(this.collective, agent), requestId, agent, payload, options.filter ?? newFilter(), options.payloadEncoding ?? 'base64');
      } catch (error) {
        subscriber.error(error);
      }
    });
  }

  /** Stops receiving replies. The connection stays open (it is the daemon's). */
  close(): void {
    this.inbox.close();
  }

  private publish(subject: string, requestId: string, agent: string, payload: string, filter: Filter, payloadEncoding: 'raw' | 'base64'): void {
    const replyTo = this.inbox.subject(requestId);
    const body = encodeRequest(
      { requestId, senderId: this.identity, callerId: this.callerId, collective: this.collective, agent, ttl: this.ttl, time: this.now(), filter, payload, payloadEncoding, replyTo },
      this.protocol,
    );
    this.nc.publish(subject, body, { reply: replyTo });
    this.logger.trace({ subject, requestId, agent }, 'published request');
  }

  private interpret(msg: Msg, rpc: string, identity: string, requestId: string): RpcReply | Error {
    if (isNoResponders(msg)) return new NoRespondersError(rpc, identity);
    const decoded = decodeReply(msg.data, { maxBytes: this.maxBytes });
    if (!decoded.ok) return this.malformed(decoded.error, msg, rpc, identity);
    const reply = decoded.value;
    if (reply.requestId !== requestId) return this.malformed(new ProtocolError('schema', 'reply', 'request id does not match the reply subject'), msg, rpc, identity);
    const agentReply = decodeAgentReply(reply.payload);
    if (!agentReply.ok) return this.malformed(agentReply.error, msg, rpc, identity);
    const { statuscode, statusmsg, data } = agentReply.value;
    if (statuscode !== StatusCode.OK) {
      const Type = statuscode === StatusCode.Aborted && statusmsg === PROVISIONING_LOCK_MESSAGE ? ProvisioningLockError : RpcStatusError;
      return new Type(rpc, reply.sender, statuscode, statusmsg);
    }
    return { sender: reply.sender, requestId, statuscode, statusmsg, data, version: reply.version };
  }

  private malformed(error: ProtocolError, msg: Msg, rpc: string, identity: string): MalformedReplyError {
    this.badMessages.report('reply', error, msg.subject);
    return new MalformedReplyError(rpc, identity, error);
  }
}

/** The server's own status message saying nothing subscribes to the subject a request went to. */
function isNoResponders(msg: Msg): boolean {
  return msg.data.length === 0 && msg.headers?.code === 503;
}
