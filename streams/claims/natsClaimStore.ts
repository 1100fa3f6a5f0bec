import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { defer } from 'rxjs';
import { ClaimHeldError, ClaimStore, ClaimStoreClosedError } from '../../lib/provision/claims/claims';
import { BucketLayout, bucketLayout } from '../../lib/bucketLayout';
import { DEFAULT_CLAIMS_BUCKET } from './claimsBucket';

/** Where the claims bucket is and how to reach it. */
export interface NatsClaimStoreConfig {
  nc: NatsConnection;
  /** Default `RXFLEET_PROVISIONER_CLAIMS`. */
  bucket?: string;
  /**
   * The JetStream API prefix: `choria.streams` through a Choria-style broker's account imports
   * (the provisioning account has no JetStream of its own), `$JS.API` on a plain JetStream account.
   */
  apiPrefix?: string;
  /** Per request. Default 2 s. */
  timeoutMs?: number;
  /** Told where the bucket lives each time its stream info is read (to warn about one replica on a cluster). */
  onLayout?: (layout: BucketLayout) => void;
}

const isWrongLastSequence = (error: unknown): boolean =>
  error instanceof JetStreamApiError &&
  (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown);

/**
 * The claims bucket over NATS, through nats.js's KV client (no home-made coordination: its
 * `create`, `update` and `delete` are JetStream's compare-and-set on the key's last sequence).
 * It needs exactly these rights, which a Choria-style broker grants through service imports under
 * the API prefix: the bucket's stream info (its max age), publishing to `$KV.<bucket>.>` (create,
 * update, delete), and direct get of the last value of a key (a create that finds a delete marker
 * reads it, then writes over it). It never asks `$JS.API.INFO`, creates nothing, and makes no
 * consumer or watcher.
 *
 * Per-message TTLs (nats-server 2.11 and later) are not used: the bucket's max age bounds every
 * claim on every server version, and 2.9 silently ignores a per-message TTL.
 */
export function natsClaimStore(config: NatsClaimStoreConfig): ClaimStore {
  const { nc, bucket = DEFAULT_CLAIMS_BUCKET, apiPrefix = '$JS.API', timeoutMs = 2000 } = config;
  const js = jetstream(nc, { apiPrefix, checkAPI: false, timeout: timeoutMs });
  let kv: Promise<KV> | undefined;
  // Bound with what the stream info said (direct get or not), once it has been read.
  let allowDirect = true;
  const open = (): Promise<KV> => {
    kv ??= new Kvm(js).open(bucket, { bindOnly: true, allow_direct: allowDirect } as Parameters<Kvm['open']>[1]).catch((error: unknown) => {
      kv = undefined;
      throw error;
    });
    return kv;
  };
  const held = (key: string, error: unknown): unknown =>
    isWrongLastSequence(error) ? new ClaimHeldError(key, (error as Error).message) : error;

  return {
    ttl: () =>
      defer(async () => {
        const jsm = await jetstreamManager(nc, { apiPrefix, checkAPI: false, timeout: timeoutMs });
        const info = await jsm.streams.info(`KV_${bucket}`);
        allowDirect = info.config.allow_direct === true;
        config.onLayout?.(bucketLayout(bucket, info));
        kv = undefined;
        // JetStream reports max_age in nanoseconds.
        return info.config.max_age / 1e6;
      }),
    create: (key, value) =>
      defer(async () => {
        try {
          return await (await open()).create(key, value);
        } catch (error) {
          throw held(key, error);
        }
      }),
    update: (key, value, revision) =>
      defer(async () => {
        try {
          return await (await open()).update(key, value, revision);
        } catch (error) {
          throw held(key, error);
        }
      }),
    adopt: (key, value) =>
      defer(async () => {
        const bucket = await open();
        // Possibly from a lagging replica (direct get): then the write below finds a newer revision and is refused.
        const entry = await bucket.get(key);
        if (entry === null || entry.operation !== 'PUT' || entry.string() !== value) throw new ClaimHeldError(key);
        try {
          return await bucket.update(key, value, entry.revision);
        } catch (error) {
          throw held(key, error);
        }
      }),
    release: (key, revision) =>
      defer(async () => {
        const closing = (): boolean => nc.isClosed() || nc.isDraining();
        if (closing()) throw new ClaimStoreClosedError(key);
        try {
          await (await open()).delete(key, { previousSeq: revision });
        } catch (error) {
          // Written by someone else since: not ours to delete any more.
          if (isWrongLastSequence(error)) return;
          throw closing() ? new ClaimStoreClosedError(key) : error;
        }
      }),
  };
}
