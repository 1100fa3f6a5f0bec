import type { NatsConnection } from '@nats-io/transport-node';
import { addKvBucketStream } from '../jetstream/kvBucketStream';

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
  await addKvBucketStream(nc, { bucket, ttlMs, replicas });
}
