import { newRequestId } from '../../../lib/choria/protocol/subjects';
import { FleetConnection, openNatsConnection } from '../../../streams/natsConnection';
import { JunkPool, JunkSizes, junkAt, lifecycleJunk, replyJunk } from './junkMessages';
import { sleep } from './processes';

/**
 * The kinds of junk the hostile client sends a provisioner: startup events, replies on live
 * requests' reply subjects (before the node's own), replies on the reply prefix for request ids
 * nobody waits for, and discovery replies.
 */
export const JUNK_KINDS = ['lifecycle', 'live', 'unsolicited', 'discovery'] as const;
export type JunkKind = (typeof JUNK_KINDS)[number];

/** What the flood sends, and at what pace. */
export interface JunkFloodOptions {
  /** The broker. */
  url: string;
  /** The provisioner's reply prefix, `provisioning.reply.<md5 of its caller id>`. */
  replyPrefix: string;
  /** Where startup events go. */
  lifecycleSubject: string;
  /** The kinds sent; the others are not. */
  kinds: ReadonlySet<JunkKind>;
  /** Junk startup events in all. */
  lifecycle: number;
  /** Junk replies for request ids nobody waits for, in all. */
  unsolicited: number;
  /** One live request in this many gets a junk reply first (2: about half). */
  liveEvery: number;
  /** Junk replies to discovery rounds, in all (one per round heard). */
  discovery: number;
  /** Messages per burst, and the pause after each. */
  burst: number;
  burstGapMs: number;
  sizes?: JunkSizes;
}

/** A hostile client on the broker. */
export interface JunkFlood {
  /** Sends the startup events, then the unsolicited replies, in bursts; resolves when all is sent or {@link stop} was called. */
  flood(): Promise<void>;
  /** What was sent so far, by kind, and the bytes in all. */
  sent(): Record<JunkKind, number> & { bytes: number };
  /** Stops sending (a burst under way finishes) and closes the connection. */
  stop(): Promise<void>;
}

/**
 * Connects as another client, as an outside test does, and listens at once for live requests
 * (`provisioning.node.>`) and discovery rounds (`provisioning.broadcast.agent.discovery`): it hears
 * them as any node in provisioning mode may, and answers first, since the nodes answer after their
 * latency. The startup events and unsolicited replies wait for {@link JunkFlood.flood}.
 */
export async function startJunkFlood(options: JunkFloodOptions): Promise<JunkFlood> {
  const lifecyclePool = lifecycleJunk(options.sizes);
  const replyPool = replyJunk(options.sizes);
  const connection: FleetConnection = await openNatsConnection({ servers: [options.url], name: 'chaos-hostile-client' });
  const nc = connection.nc;
  const counts: Record<JunkKind, number> = { lifecycle: 0, live: 0, unsolicited: 0, discovery: 0 };
  let bytes = 0;
  let stopped = false;
  const send = (kind: JunkKind, subject: string, pool: JunkPool, n: number): void => {
    const payload = junkAt(pool, n);
    nc.publish(subject, payload);
    counts[kind]++;
    bytes += payload.byteLength;
  };

  if (options.kinds.has('live')) {
    let requests = 0;
    nc.subscribe('provisioning.node.>', {
      callback: (_error, msg) => {
        if (stopped || msg.reply === undefined || requests++ % options.liveEvery !== 0) return;
        send('live', msg.reply, replyPool, counts.live);
      },
    });
  }
  if (options.kinds.has('discovery')) {
    nc.subscribe('provisioning.broadcast.agent.discovery', {
      callback: (_error, msg) => {
        if (stopped || msg.reply === undefined || counts.discovery >= options.discovery) return;
        // The oversized shapes first: the worst a round can meet.
        send('discovery', msg.reply, replyPool, 4 + 5 * counts.discovery);
      },
    });
  }
  await nc.flush();

  const bursts = async (kind: JunkKind, total: number, subject: () => string, pool: JunkPool): Promise<void> => {
    if (!options.kinds.has(kind)) return;
    for (let n = 0; n < total && !stopped;) {
      const end = Math.min(total, n + options.burst);
      for (; n < end; n++) send(kind, subject(), pool, n);
      await sleep(options.burstGapMs);
    }
  };
  return {
    async flood() {
      await bursts('lifecycle', options.lifecycle, () => options.lifecycleSubject, lifecyclePool);
      await bursts('unsolicited', options.unsolicited, () => `${options.replyPrefix}.${newRequestId()}`, replyPool);
      if (!stopped) await nc.flush();
    },
    sent: () => ({ ...counts, bytes }),
    async stop() {
      stopped = true;
      await connection.drain().catch(() => undefined);
    },
  };
}
