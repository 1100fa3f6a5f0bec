import { DiscardPolicy, StorageType, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/** The claims bucket's default name (`rxfleet.claims_bucket`). */
export const DEFAULT_CLAIMS_BUCKET = 'RXFLEET_PROVISIONER_CLAIMS';

/** Options for {@link createClaimsBucket}. */
export interface ClaimsBucketOptions {
  /** The bucket's max age, ms: a claim's lifetime after its last write. */
  ttlMs: number;
  /** Default `RXFLEET_PROVISIONER_CLAIMS`. */
  bucket?: string;
  /** Default 1. */
  replicas?: number;
}

/**
 * Creates the claims bucket as `nats kv add <bucket> --ttl <ttl> --history 1` does (a KV bucket:
 * stream `KV_<bucket>` on `$KV.<bucket>.>`, one value per key, max age the TTL, direct get on,
 * rollups on, deletes by marker only), for the demo, the specs and the benchmarks; a site makes it
 * once with the `nats` CLI in the account that owns it (docs/provisioner/high-availability.md,
 * "Active-active").
 * An existing bucket of the same configuration is left as it is.
 */
export async function createClaimsBucket(nc: NatsConnection, options: ClaimsBucketOptions): Promise<void> {
  const { ttlMs, bucket = DEFAULT_CLAIMS_BUCKET, replicas = 1 } = options;
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: `KV_${bucket}`,
    subjects: [`$KV.${bucket}.>`],
    max_age: ttlMs * 1_000_000,
    max_msgs_per_subject: 1,
    discard: DiscardPolicy.New,
    deny_delete: true,
    allow_rollup_hdrs: true,
    allow_direct: true,
    storage: StorageType.File,
    num_replicas: replicas,
  });
}
