import { MsgHdrs, MsgHdrsImpl, NatsConnection, headers as makeHeaders } from '@nats-io/transport-node';
import { BehaviorSubject } from 'rxjs';
import { MemoryNatsConnection } from './memoryNatsConnection';
import { DeliveryQueue } from './memoryNatsDelivery';
import type { MemoryRouter, RoutedSubscription } from './memoryNatsParts';
import { ConnectionState, FleetConnection, fleetConnectionOf } from '../natsConnection';

/**
 * A NATS server in this process's memory, for the demo when no `nats-server` is installed and for
 * fast unit tests. It implements the part of nats.js's `NatsConnection` rxfleet uses, with NATS's
 * semantics (spec/streams/memoryNats.spec.ts runs the same cases against a real nats-server):
 *
 * - subjects of `.`-separated tokens; subscriptions with `*` (one token) and `>` (one or more
 *   trailing tokens);
 * - queue groups: each message goes to one member of each group, and to every plain subscriber;
 * - delivery is asynchronous and in publish order, batched on `setImmediate` so a storm of
 *   request and reply never starves timers and I/O;
 * - a publish with a reply subject that no subscription matches gets the server's no-responders
 *   status (an empty message whose headers carry code 503) on the reply subject;
 * - request/reply with a timeout (`TimeoutError`) and no responders (`RequestError` caused by
 *   `NoRespondersError`), replies under the connection's `inboxPrefix`;
 * - headers (copied, as a wire would), `max` on subscriptions, `unsubscribe`, `drain`, `close`,
 *   `closed()`, `status()` (never a reconnect: nothing can disconnect).
 *
 * Not implemented: JetStream (use {@link MemoryElectionBucket} for the election), `requestMany`.
 */
export class MemoryNatsServer implements MemoryRouter {
  private readonly subscriptions = new Set<RoutedSubscription>();
  private readonly delivery = new DeliveryQueue();
  private readonly groupTurns = new Map<string, number>();
  private sids = 0;

  /** A new client connection. */
  connect(options: { name?: string; inboxPrefix?: string } = {}): NatsConnection {
    return new MemoryNatsConnection(this, options.name ?? '', options.inboxPrefix ?? '_INBOX') as unknown as NatsConnection;
  }

  /** Subscriptions open now, on every connection. */
  get subscriptionCount(): number {
    return this.subscriptions.size;
  }

  /** @internal */
  _subscribe(sub: RoutedSubscription): number {
    this.subscriptions.add(sub);
    return ++this.sids;
  }

  /** @internal */
  _unsubscribe(sub: RoutedSubscription): void {
    this.subscriptions.delete(sub);
  }

  /**
   * @internal Routes one message: matching plain subscriptions all get it, each queue group one
   * member. Returns whether anyone was subscribed (no-responders is decided at publish, as a server does).
   */
  _route(subject: string, data: Uint8Array, reply: string | undefined, headers: MsgHdrs | undefined): boolean {
    const tokens = subject.split('.');
    const plain: RoutedSubscription[] = [];
    const groups = new Map<string, RoutedSubscription[]>();
    for (const sub of this.subscriptions) {
      if (!sub.matches(tokens)) continue;
      if (sub.queue === undefined) plain.push(sub);
      else {
        const members = groups.get(sub.queue) ?? [];
        members.push(sub);
        groups.set(sub.queue, members);
      }
    }
    const targets = [...plain];
    for (const [group, members] of groups) {
      const turn = this.groupTurns.get(group) ?? 0;
      this.groupTurns.set(group, turn + 1);
      targets.push(members[turn % members.length]);
    }
    for (const sub of targets) {
      const copy = headers === undefined ? undefined : copyHeaders(headers);
      this.delivery.enqueue(() => sub.deliver(subject, data, reply, copy));
    }
    if (targets.length === 0 && reply !== undefined) {
      // The server's no-responders status, as nats-server sends it to clients that support headers.
      this.delivery.enqueue(() => this._route(reply, new Uint8Array(0), undefined, makeHeaders(503, 'No Responders')));
    }
    return targets.length > 0;
  }

  /** @internal Resolves once everything queued before the call has been delivered. */
  _flush(): Promise<void> {
    return this.delivery.flush();
  }
}

function copyHeaders(h: MsgHdrs): MsgHdrs {
  const copy = (h.code > 0 ? makeHeaders(h.code, h.description === '' ? 'status' : h.description) : makeHeaders()) as MsgHdrsImpl;
  for (const [key, values] of h) for (const value of values) copy.append(key, value);
  return copy;
}

/** An in-memory connection as the daemon's {@link FleetConnection}: always connected until drained. */
export function memoryFleetConnection(nc: NatsConnection): FleetConnection {
  const state = new BehaviorSubject<ConnectionState>('connected');
  void nc.closed().then(() => {
    state.next('closed');
    state.complete();
  });
  return fleetConnectionOf(nc, state);
}
