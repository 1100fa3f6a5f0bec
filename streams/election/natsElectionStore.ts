import { NatsConnection, headers } from '@nats-io/transport-node';
import { defer } from 'rxjs';
import { ElectionStore } from '../../lib/election/ElectionStore';
import { BucketLayout, bucketLayout } from '../../lib/bucketLayout';

/** Where the election's bucket is and how to reach it. */
export interface NatsElectionStoreConfig {
  nc: NatsConnection;
  /** Default `CHORIA_LEADER_ELECTION`. */
  bucket?: string;
  /** Default `provisioner`. */
  key?: string;
  /**
   * The JetStream API prefix. Choria imports the choria account's JetStream API into the
   * provisioning account as `choria.streams`; a plain JetStream server uses `$JS.API`.
   */
  apiPrefix?: string;
  /** Per request. Default 2 s. */
  timeoutMs?: number;
  /** Told where the bucket lives each time its stream info is read (to warn about one replica on a cluster). */
  onLayout?: (layout: BucketLayout) => void;
}

/** A JetStream API error, with its codes (10071 is "wrong last sequence": someone else holds the key). */
export class JetStreamApiError extends Error {
  constructor(
    message: string,
    readonly code: number,
    readonly errCode: number,
  ) {
    super(message);
    this.name = 'JetStreamApiError';
  }
}

interface ApiAnswer {
  error?: { code: number; err_code?: number; description?: string };
}

function decode<T extends ApiAnswer>(data: Uint8Array, what: string): T {
  let answer: T;
  try {
    answer = JSON.parse(new TextDecoder().decode(data)) as T;
  } catch {
    throw new JetStreamApiError(`${what}: the answer was not JSON`, 0, 0);
  }
  if (answer.error !== undefined) {
    throw new JetStreamApiError(`${what}: ${answer.error.description ?? 'error'}`, answer.error.code, answer.error.err_code ?? 0);
  }
  return answer;
}

/**
 * The election bucket over NATS with only the rights Choria's provisioning account has
 * (choria-provisioner.md §7.4): a stream-info request for the TTL, and publishes to the key's
 * subject carrying `Nats-Expected-Last-Subject-Sequence`, answered by a JetStream publish ack.
 * No `$JS.API.INFO`, consumers, direct get or watchers, which that account cannot reach.
 *
 * With a prefix other than `$JS.API` the key's subject is `<prefix>.$KV.<bucket>.<key>`, as
 * nats.go and nats.js both build it, so the broker's import maps it to the real subject.
 */
export function natsElectionStore(config: NatsElectionStoreConfig): ElectionStore {
  const { nc, bucket = 'CHORIA_LEADER_ELECTION', key = 'provisioner', apiPrefix = '$JS.API', timeoutMs = 2000 } = config;
  const infoSubject = `${apiPrefix}.STREAM.INFO.KV_${bucket}`;
  const keySubject = apiPrefix === '$JS.API' ? `$KV.${bucket}.${key}` : `${apiPrefix}.$KV.${bucket}.${key}`;

  const write = (value: string, expected: number) =>
    defer(async () => {
      const h = headers();
      h.set('Nats-Expected-Last-Subject-Sequence', String(expected));
      const reply = await nc.request(keySubject, value, { headers: h, timeout: timeoutMs });
      const ack = decode<ApiAnswer & { seq?: number }>(reply.data, `writing ${keySubject}`);
      if (typeof ack.seq !== 'number') throw new JetStreamApiError(`writing ${keySubject}: no sequence in the acknowledgement`, 0, 0);
      return ack.seq;
    });

  return {
    ttl: () =>
      defer(async () => {
        const reply = await nc.request(infoSubject, '', { timeout: timeoutMs });
        const info = decode<
          ApiAnswer & { config?: { max_age?: number; num_replicas?: number }; cluster?: { name?: string; leader?: string } }
        >(reply.data, `reading ${infoSubject}`);
        config.onLayout?.(bucketLayout(bucket, info));
        // JetStream reports max_age in nanoseconds.
        return (info.config?.max_age ?? 0) / 1e6;
      }),
    create: (value) => write(value, 0),
    update: (value, lastSequence) => write(value, lastSequence),
  };
}
