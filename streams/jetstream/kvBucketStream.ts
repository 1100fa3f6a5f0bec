import { DiscardPolicy, StorageType, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { definedFields } from '../../lib/definedFields';

/** The stream behind a KV bucket, as {@link addKvBucketStream} makes it. */
export interface KvBucketStream {
  bucket: string;
  /** The bucket's max age, ms: how long a key lives after its last write. */
  ttlMs: number;
  replicas: number;
  /** The largest value, bytes; default: the server's limit. */
  maxMsgSize?: number;
}

/**
 * Adds the stream behind a KV bucket as `nats kv add <bucket> --ttl <ttl> --history 1` and a Choria
 * broker make one: stream `KV_<bucket>` on `$KV.<bucket>.>`, one value per key, max age the TTL,
 * discard new, deletes by marker only, rollups and direct get allowed, file storage. An existing
 * stream of the same configuration is left as it is.
 */
export async function addKvBucketStream(nc: NatsConnection, { bucket, ttlMs, replicas, maxMsgSize }: KvBucketStream): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: `KV_${bucket}`,
    subjects: [`$KV.${bucket}.>`],
    max_age: ttlMs * 1_000_000,
    max_msgs_per_subject: 1,
    ...definedFields({ max_msg_size: maxMsgSize }),
    discard: DiscardPolicy.New,
    deny_delete: true,
    allow_rollup_hdrs: true,
    allow_direct: true,
    storage: StorageType.File,
    num_replicas: replicas,
  });
}
