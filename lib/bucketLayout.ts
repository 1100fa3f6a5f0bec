/** Where a KV bucket's stream lives, as its stream info says (`num_replicas`, `cluster`). */
export interface BucketLayout {
  /** The bucket's name (`CHORIA_LEADER_ELECTION`, `RXFLEET_PROVISIONER_CLAIMS`). */
  bucket: string;
  /** `config.num_replicas`: how many servers hold it. */
  replicas: number;
  /** `cluster.name`: set only when the broker is a cluster. */
  cluster?: string;
  /** `cluster.leader`: the server that holds a one-replica bucket. */
  leader?: string;
  /** Servers the stream info names (the leader and its replicas): the cluster's size as far as it shows. */
  servers: number;
}

/** The layout of a bucket from its stream info's answer (JetStream's JSON field names). */
export function bucketLayout(
  bucket: string,
  info: { config?: { num_replicas?: number }; cluster?: { name?: string; leader?: string; replicas?: unknown[] } },
): BucketLayout {
  const replicas = info.config?.num_replicas ?? 1;
  const layout: BucketLayout = { bucket, replicas: replicas > 0 ? replicas : 1, servers: 1 + (info.cluster?.replicas?.length ?? 0) };
  if (info.cluster?.name !== undefined && info.cluster.name !== '') layout.cluster = info.cluster.name;
  if (info.cluster?.leader !== undefined && info.cluster.leader !== '') layout.leader = info.cluster.leader;
  return layout;
}

/**
 * The warning a bucket deserves at start (DECISIONS P20): on a cluster of brokers, a bucket with one
 * replica lives on one server, whose loss stops every instance. Undefined when there is nothing to say
 * (one broker, or a replicated bucket).
 */
export function singleReplicaWarning(layout: BucketLayout): string | undefined {
  if (layout.cluster === undefined || layout.replicas > 1) return undefined;
  const where = layout.leader === undefined ? 'one server' : `server ${layout.leader}`;
  return `the ${layout.bucket} bucket has 1 replica on the cluster ${layout.cluster}: ${where} is a single point of failure for it; give it a replica on every server (nats stream edit KV_${layout.bucket} --replicas 3)`;
}
