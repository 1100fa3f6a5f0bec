import type { NatsConnection } from '@nats-io/transport-node';
import { addKvBucketStream } from '../jetstream/kvBucketStream';

/** Options for {@link createElectionBucket}. */
export interface ElectionBucketOptions {
  /** The bucket TTL (`plugin.choria.network.stream.leader_election_ttl`, default 1m), ms. */
  ttlMs?: number;
  /** Default 1. */
  replicas?: number;
  /** Default `CHORIA_LEADER_ELECTION`. */
  bucket?: string;
}

/**
 * Creates the leader-election bucket as a Choria broker does when Streams is on
 * (`broker/network/network_jetstream.go`, choria-provisioner.md §7.3): stream
 * `KV_CHORIA_LEADER_ELECTION` on `$KV.CHORIA_LEADER_ELECTION.>`, max age the TTL, one message per
 * subject, 1 KiB messages, discard new, deny delete, rollups and direct get allowed, file storage.
 * For the demo and tests on a plain nats-server; a Choria broker makes its own. Needs an account
 * with JetStream; an existing bucket of the same configuration is left as it is.
 */
export async function createElectionBucket(nc: NatsConnection, options: ElectionBucketOptions = {}): Promise<void> {
  const { ttlMs = 60_000, replicas = 1, bucket = 'CHORIA_LEADER_ELECTION' } = options;
  await addKvBucketStream(nc, { bucket, ttlMs, replicas, maxMsgSize: 1024 });
}
