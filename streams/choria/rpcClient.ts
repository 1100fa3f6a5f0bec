import type { Msg, NatsConnection } from '@nats-io/transport-node';
import type { ValidateFunction } from 'ajv';
import { Observable, SchedulerLike, Subscription, asyncScheduler } from 'rxjs';
import { ActionSpec, DEFAULT_DISCOVERY_TIMEOUT_SECONDS, attemptTimeoutMs, replyDataErrors } from '../../lib/choria/agents';
import { BadMessages } from '../../lib/choria/badMessages';
import { NoRespondersError, ProtocolError, RpcAbortedError, RpcConnectionLostError, RpcTimeoutError } from '../../lib/choria/errors';
import { DEFAULT_MAX_BYTES, EncodeRequestOptions, decodeReply, encodeRequest } from '../../lib/choria/protocol/codec';
import { encodeAgentRequest } from '../../lib/choria/protocol/mcorpc';
import {
  PROVISIONING_COLLECTIVE,
  broadcastSubject,
  CallerHash,
  callerIdFor,
  directSubject,
  newRequestId,
  replyPrefix,
} from '../../lib/choria/protocol/subjects';
import { ChoriaReply, Filter, newFilter } from '../../lib/choria/protocol/types';
import { RpcReply, judgeReply } from '../../lib/choria/replyCheck';
import { ProtocolOutcome, protocolOutcome } from '../../lib/choria/connectorMetrics';
import { Logger, silentLogger } from '../../lib/logger';
import type { ConnectionState } from '../natsConnection';
import { ReplyInbox } from './replyInbox';

export type { RpcReply } from '../../lib/choria/replyCheck';

/** Options for {@link ChoriaRpcClient}. */
export interface ChoriaRpcClientOptions {
  /** The daemon's one connection; the client never closes it. */
  nc: NatsConnection;
  /** This client's identity (the requests' sender id). */
  identity: string;
  /** Who the requests come from; its MD5 names the reply subjects. Default `choria=<identity>`. */
  callerId?: string;
  /** How the caller id is hashed in the reply subjects: `md5` (default), `sha256` in FIPS 140 mode. */
  callerHash?: CallerHash;
  /** Told how each reply's Choria layers fared, as go-choria's protocol counters count them. */
  protocolMetrics?: { observe(outcome: ProtocolOutcome): void };
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
  /**
   * The connection's state (the daemon's `FleetConnection.state$`). When it comes back after being
   * lost, every attempt still waiting ends at once with {@link RpcConnectionLostError}, so the retry
   * wrapper sends it again instead of waiting out a timeout for a reply that was lost with the
   * connection. Without it, such attempts time out.
   */
  connection?: Observable<ConnectionState>;
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
 * no-responders status instead of after the whole timeout).
 *
 * Guarantees:
 * - Every reply is decoded and validated. One that does not decode, names another request, comes
 *   from another node than the one asked, or carries data that does not fit the action is counted
 *   in `badMessages` and skipped: the attempt goes on waiting for the real reply or its timeout
 *   (DECISIONS P18), so one broken or hostile node publishing to `provisioning.reply.>` cannot fail
 *   anybody else's attempts.
 * - With `connection`, attempts still waiting when the connection comes back after a loss end at
 *   once with {@link RpcConnectionLostError} (their request or reply is gone).
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
  /** How to end each attempt waiting now, should the connection come back after a loss. */
  private readonly waiting = new Set<() => void>();
  private readonly connectionWatch: Subscription | undefined;
  private readonly ownBadMessages: boolean;

  private readonly protocolMetrics: { observe(outcome: ProtocolOutcome): void } | undefined;

  constructor(options: ChoriaRpcClientOptions) {
    this.nc = options.nc;
    this.identity = options.identity;
    this.callerId = options.callerId ?? callerIdFor(options.identity);
    this.protocolMetrics = options.protocolMetrics;
    this.collective = options.collective ?? PROVISIONING_COLLECTIVE;
    this.protocol = options.protocol ?? { version: 'v1' };
    this.ttl = options.ttl ?? 60;
    this.discoveryTimeoutSeconds = options.discoveryTimeoutSeconds ?? DEFAULT_DISCOVERY_TIMEOUT_SECONDS;
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    this.now = options.now ?? Date.now;
    this.logger = options.logger ?? silentLogger;
    this.ownBadMessages = options.badMessages === undefined;
    this.badMessages = options.badMessages ?? new BadMessages({ logger: this.logger, scheduler: this.scheduler });
    this.inbox = new ReplyInbox(this.nc, replyPrefix(this.collective, this.callerId, options.callerHash ?? 'md5'), {
      logger: this.logger,
      onUnsolicited: (subject) =>
        this.badMessages.report(
          'reply',
          {
            reason: 'unsolicited',
            layer: 'inbox',
            message: 'a reply for no waiting request (late, after a timeout or an outage, or for another process with this caller id)',
          },
          subject,
        ),
      scheduler: this.scheduler,
    });
    let lost = false;
    this.connectionWatch = options.connection?.subscribe((state) => {
      if (state !== 'connected') lost = true;
      else if (lost) {
        lost = false;
        this.connectionBack();
      }
    });
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
   * {@link NoRespondersError}, {@link RpcConnectionLostError} or {@link RpcAbortedError}. Replies
   * that are not this node's answer to this request are counted and skipped (see the class).
   * Nothing is sent until subscription; unsubscribing stops waiting (the request is already out).
   */
  request(identity: string, agent: string, action: string, data: object, options: RequestOptions = {}): Observable<RpcReply> {
    return this.attempt(identity, agent, action, data, options);
  }

  /**
   * One attempt of a provisioning RPC with typed input and output: as {@link request}, and only a
   * reply whose data passes the action's schema (DDL defaults filled in) answers it; another is
   * counted and skipped like any malformed reply.
   */
  call<I extends object, O>(spec: ActionSpec<I, O>, identity: string, input: I, options: RequestOptions = {}): Observable<RpcReply<O>> {
    return this.attempt(identity, spec.agent, spec.action, input, options, spec.validate) as Observable<RpcReply<O>>;
  }

  private attempt(
    identity: string,
    agent: string,
    action: string,
    data: object,
    options: RequestOptions,
    validate?: ValidateFunction,
  ): Observable<RpcReply> {
    const rpc = `${agent}#${action}`;
    return new Observable<RpcReply>((subscriber) => {
      const { signal, timeoutMs = this.timeoutMs(agent) } = options;
      if (signal?.aborted) {
        subscriber.error(new RpcAbortedError(rpc, signal.reason));
        return;
      }
      const requestId = newRequestId();
      let refused = 0;
      const expected = { rpc, identity, requestId, maxBytes: this.maxBytes, validate, describeErrors: replyDataErrors };
      const stopListening = this.inbox.listen(requestId, (msg) => {
        if (isNoResponders(msg)) {
          subscriber.error(new NoRespondersError(rpc, identity));
          return;
        }
        const verdict = judgeReply(msg.data, expected);
        this.protocolMetrics?.observe(
          verdict.kind === 'refused' ? protocolOutcome(verdict.envelope === 'valid' ? undefined : verdict.envelope) : 'valid',
        );
        if (verdict.kind === 'refused') {
          refused++;
          this.badMessages.report('reply', verdict.refusal, msg.subject);
        } else if (verdict.kind === 'status') {
          subscriber.error(verdict.error);
        } else {
          subscriber.next(verdict.reply);
          subscriber.complete();
        }
      });
      const onAbort = (): void => subscriber.error(new RpcAbortedError(rpc, signal?.reason));
      signal?.addEventListener('abort', onAbort, { once: true });
      const timer = this.scheduler.schedule(() => subscriber.error(new RpcTimeoutError(rpc, identity, timeoutMs, refused)), timeoutMs);
      const interrupt = (): void => subscriber.error(new RpcConnectionLostError(rpc, identity));
      this.waiting.add(interrupt);
      subscriber.add(() => {
        stopListening();
        timer.unsubscribe();
        this.waiting.delete(interrupt);
        signal?.removeEventListener('abort', onAbort);
      });
      try {
        this.publish(
          directSubject(this.collective, identity),
          requestId,
          agent,
          encodeAgentRequest(agent, action, data),
          newFilter({ agent: [agent] }),
          'raw',
        );
      } catch (error) {
        subscriber.error(error);
      }
    });
  }

  /**
   * A broadcast request to every node hosting `agent` (`<collective>.broadcast.agent.<agent>`),
   * as an Observable of every valid reply, until unsubscribed. It completes at once when NATS says
   * nobody listens on the subject (no responders means no nodes, not an error). Malformed replies
   * are counted and skipped.
   */
  broadcast(
    agent: string,
    payload: string,
    options: { filter?: Filter; payloadEncoding?: 'raw' | 'base64' } = {},
  ): Observable<ChoriaReply> {
    return new Observable<ChoriaReply>((subscriber) => {
      const requestId = newRequestId();
      subscriber.add(
        this.inbox.listen(requestId, (msg) => {
          if (isNoResponders(msg)) {
            subscriber.complete();
            return;
          }
          const decoded = decodeReply(msg.data, { maxBytes: this.maxBytes });
          this.protocolMetrics?.observe(protocolOutcome(decoded.ok ? undefined : decoded.error));
          if (!decoded.ok) {
            this.badMessages.report('broadcast_reply', decoded.error, msg.subject);
            return;
          }
          if (decoded.value.requestId !== requestId) {
            this.badMessages.report(
              'broadcast_reply',
              new ProtocolError('schema', 'reply', 'request id does not match the reply subject'),
              msg.subject,
            );
            return;
          }
          subscriber.next(decoded.value);
        }),
      );
      try {
        this.publish(
          broadcastSubject(this.collective, agent),
          requestId,
          agent,
          payload,
          options.filter ?? newFilter(),
          options.payloadEncoding ?? 'base64',
        );
      } catch (error) {
        subscriber.error(error);
      }
    });
  }

  /** Stops receiving replies and watching the connection. The connection stays open (it is the daemon's). */
  close(): void {
    this.connectionWatch?.unsubscribe();
    this.inbox.close();
    if (this.ownBadMessages) this.badMessages.close();
  }

  /** The connection is back after a loss: every attempt waiting ends, to be sent again. */
  private connectionBack(): void {
    const waiting = [...this.waiting];
    if (waiting.length === 0) return;
    this.logger.info(
      { requests: waiting.length },
      `connection to the broker is back: sending again the ${waiting.length} request${waiting.length === 1 ? '' : 's'} whose replies were lost with it`,
    );
    for (const interrupt of waiting) interrupt();
  }

  private publish(
    subject: string,
    requestId: string,
    agent: string,
    payload: string,
    filter: Filter,
    payloadEncoding: 'raw' | 'base64',
  ): void {
    const replyTo = this.inbox.subject(requestId);
    const body = encodeRequest(
      {
        requestId,
        senderId: this.identity,
        callerId: this.callerId,
        collective: this.collective,
        agent,
        ttl: this.ttl,
        time: this.now(),
        filter,
        payload,
        payloadEncoding,
        replyTo,
      },
      this.protocol,
    );
    this.nc.publish(subject, body, { reply: replyTo });
    this.logger.trace({ subject, requestId, agent }, 'published request');
  }
}

/** The server's own status message saying nothing subscribes to the subject a request went to. */
function isNoResponders(msg: Msg): boolean {
  return msg.data.length === 0 && msg.headers?.code === 503;
}
