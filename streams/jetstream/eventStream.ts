/**
 * The JetStream resources the enricher's durable outputs need, checked (and created when the
 * configuration says so) at start: the stream capturing `<prefix>.>`, and the state bucket.
 */
import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType, jetstreamManager } from '@nats-io/jetstream';
import type { StreamConfig, StreamInfo } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { BucketLayout, bucketLayout, singleReplicaWarning } from '../../lib/bucketLayout';
import { JetStreamOutputSettings, StateOutputSettings } from '../../lib/enricher/config/config';

/** A stream or bucket the enricher cannot use as it is: one line saying what to do. */
export class DurableSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DurableSetupError';
  }
}

/** What the check found: the resource as it is, and whether the enricher created it. */
export interface SetupReport {
  name: string;
  created: boolean;
  replicas: number;
  /** ms; 0 for ever. */
  maxAge: number;
  /** bytes; -1 no limit. */
  maxBytes: number;
  /** ms. */
  duplicateWindow: number;
  layout: BucketLayout;
  /** A one-replica stream on a cluster (DECISIONS P20), or a duplicate window shorter than the ack timeout. */
  warnings: string[];
}

const NS = 1_000_000;

/** Whether the stream subject `pattern` captures every subject under `prefix.` (`>`, `prefix.>`, or a wider `a.>`). */
export function captures(pattern: string, prefix: string): boolean {
  if (pattern === '>') return true;
  if (!pattern.endsWith('.>')) return false;
  const head = pattern.slice(0, -2).split('.');
  const tokens = prefix.split('.');
  if (head.length > tokens.length) return false;
  return head.every((token, i) => token === '*' || token === tokens[i]);
}

async function infoOrUndefined(nc: NatsConnection, name: string): Promise<StreamInfo | undefined> {
  const jsm = await jetstreamManager(nc);
  try {
    return await jsm.streams.info(name);
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return undefined;
    throw error;
  }
}

function report(info: StreamInfo, name: string, created: boolean, what: 'stream' | 'bucket'): SetupReport {
  const layout = bucketLayout(name, info);
  let warning = singleReplicaWarning(layout);
  if (what === 'stream') warning = warning?.replace(' bucket ', ' stream ').replace('KV_', '');
  return {
    name,
    created,
    replicas: info.config.num_replicas || 1,
    maxAge: info.config.max_age / NS,
    maxBytes: info.config.max_bytes,
    duplicateWindow: (info.config.duplicate_window ?? 0) / NS,
    layout,
    warnings: warning === undefined ? [] : [warning],
  };
}

/**
 * Checks that the stream `settings.stream` captures `<prefix>.>`, creating it when it is missing
 * and `settings.create` says so (replicas, max age, max bytes and the duplicate window from the
 * settings; file storage; the oldest dropped first). Throws a {@link DurableSetupError} saying
 * what to do when it is missing and not to be created, or captures other subjects.
 */
export async function ensureEventStream(nc: NatsConnection, settings: JetStreamOutputSettings): Promise<SetupReport> {
  const wanted = `${settings.subjectPrefix}.>`;
  const existing = await infoOrUndefined(nc, settings.stream);
  if (existing !== undefined) {
    if (!existing.config.subjects.some((s) => captures(s, settings.subjectPrefix)))
      throw new DurableSetupError(
        `the stream ${settings.stream} captures ${existing.config.subjects.join(', ') || 'nothing'}, not ${wanted}: add ${wanted} to its subjects or name another stream (outputs.jetstream.stream)`,
      );
    const out = report(existing, settings.stream, false, 'stream');
    if (out.duplicateWindow > 0 && out.duplicateWindow < settings.ackTimeout)
      out.warnings.push(
        `the stream ${settings.stream} has a duplicate window (${out.duplicateWindow} ms) shorter than outputs.jetstream.ack_timeout (${settings.ackTimeout} ms): a publish sent again after a lost acknowledgement may be kept twice (consumers drop it by instance_seq)`,
      );
    return out;
  }
  if (!settings.create)
    throw new DurableSetupError(
      `no stream ${settings.stream} on the server: create one capturing ${wanted} (nats stream add ${settings.stream} --subjects '${wanted}'), or set outputs.jetstream.create: true`,
    );
  const jsm = await jetstreamManager(nc);
  const config: Partial<StreamConfig> & { name: string } = {
    name: settings.stream,
    subjects: [wanted],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: settings.replicas,
    max_age: settings.maxAge * NS,
    max_bytes: settings.maxBytes === 0 ? -1 : settings.maxBytes,
    duplicate_window: settings.duplicateWindow * NS,
  };
  try {
    return report(await jsm.streams.add(config), settings.stream, true, 'stream');
  } catch (error) {
    throw new DurableSetupError(`cannot create the stream ${settings.stream} on ${wanted}: ${(error as Error).message}`);
  }
}

/** The KV bucket's stream name. */
export const bucketStream = (bucket: string): string => `KV_${bucket}`;

/**
 * Checks that the state bucket exists, creating it when it is missing and `settings.create` says
 * so: a KV bucket as `nats kv add` makes one (one value per key, delete markers kept, rollups and
 * direct gets allowed), no TTL (a record lives until its instance goes). Throws a
 * {@link DurableSetupError} when it is missing and not to be created.
 */
export async function ensureStateBucket(nc: NatsConnection, settings: StateOutputSettings): Promise<SetupReport> {
  const name = bucketStream(settings.bucket);
  const existing = await infoOrUndefined(nc, name);
  if (existing !== undefined) return { ...report(existing, settings.bucket, false, 'bucket'), duplicateWindow: 0 };
  if (!settings.create)
    throw new DurableSetupError(
      `no state bucket ${settings.bucket} on the server: create it (nats kv add ${settings.bucket} --replicas ${settings.replicas}), or set outputs.state.create: true`,
    );
  const jsm = await jetstreamManager(nc);
  try {
    const info = await jsm.streams.add({
      name,
      subjects: [`$KV.${settings.bucket}.>`],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.New,
      max_msgs_per_subject: 1,
      num_replicas: settings.replicas,
      deny_delete: true,
      allow_rollup_hdrs: true,
      allow_direct: true,
      duplicate_window: 120 * 1e9,
    });
    return { ...report(info, settings.bucket, true, 'bucket'), duplicateWindow: 0 };
  } catch (error) {
    throw new DurableSetupError(`cannot create the state bucket ${settings.bucket}: ${(error as Error).message}`);
  }
}
