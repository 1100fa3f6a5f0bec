import type { NatsConnection } from '@nats-io/transport-node';
import { Observable, concat, defer, filter, from, map, mergeMap, of } from 'rxjs';
import { FleetInput, FleetUpdate } from '../../lib/enricher/follow/fleetLedger';
import { mergeFleet } from '../../lib/enricher/follow/mergeFleet';
import { decodeEventPayload } from '../../lib/enricher/output/payloadDecoder';
import { readStateSnapshot } from './stateBucket';
import { DeliverPolicy, streamMessages } from './streamReading';
import { retryingTransient } from './transient';

/** Where {@link followFleet} reads, and who hears what it skips. */
export interface FollowFleetOptions {
  /** A connection (nats.js 3, `@nats-io/transport-node`) whose account may read the stream and the bucket. */
  nc: NatsConnection;
  /** The enricher's stream (`outputs.jetstream.stream`). Default `INCUS_EVENTS`. */
  stream?: string;
  /** The state bucket (`outputs.state.bucket`). Default `INCUS_STATE`. */
  bucket?: string;
  /** The stream's subject prefix (`outputs.jetstream.subject_prefix`). Default `incus.events`. */
  subjectPrefix?: string;
  /** Told of each bucket value or stream message that is not an enriched event (skipped), with its stream sequence. */
  onMalformed?: (reason: string, streamSeq: number) => void;
}

/**
 * The fleet's state and each change to it, read-then-follow, with no gap and no race: the state
 * bucket is read whole (each key's last value as of one moment, with the watermark: the stream
 * sequence up to which the bucket holds every instance event), then the stream is followed from
 * the next sequence, each event merged by its instance's sequence ({@link mergeFleet}): what the
 * bucket already held, and a repeat the duplicate window let through, say nothing; a gap is
 * counted (`missed`) on the event after it.
 *
 * ```ts
 * followFleet({ nc }).pipe(
 *   filter((u) => u.kind === 'change' && u.event.action === 'instance-started'),
 * ).subscribe((u) => console.log(u.event.name, u.instance?.event.instance?.interfaces));
 * ```
 *
 * Emits `{ kind: 'state', instances }` once, then `{ kind: 'change', ... }` per event, for ever.
 * Cold: each subscription reads the bucket and follows the stream on its own (an ordered
 * consumer, recreated by nats.js after a reconnect, so a server restart repeats and loses
 * nothing); unsubscribing stops it. Errors when the bucket or the stream cannot be read (missing,
 * not permitted) or the connection closes.
 */
export function followFleet(options: FollowFleetOptions): Observable<FleetUpdate> {
  const { nc, stream = 'INCUS_EVENTS', bucket = 'INCUS_STATE', subjectPrefix = 'incus.events', onMalformed } = options;
  return defer(() => from(retryingTransient(() => readStateSnapshot(nc, bucket)))).pipe(
    mergeMap((snapshot) => {
      if (snapshot.malformed > 0) onMalformed?.(`${snapshot.malformed} bucket values are not enriched instance events`, 0);
      const first: FleetInput = { kind: 'snapshot', instances: snapshot.instances, gone: snapshot.gone, watermark: snapshot.watermark };
      const events = streamMessages(nc, stream, {
        filter_subjects: `${subjectPrefix}.*.instance.*.*`,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: snapshot.watermark + 1,
      }).pipe(
        map((m): FleetInput | undefined => {
          const decoded = decodeEventPayload(m.data);
          if (decoded.ok) return { kind: 'event', event: decoded.value, streamSeq: m.seq };
          onMalformed?.(decoded.reason, m.seq);
          return undefined;
        }),
        filter((input): input is FleetInput => input !== undefined),
      );
      return concat(of(first), events);
    }),
    mergeFleet(),
  );
}
