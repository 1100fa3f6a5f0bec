import { DiscardPolicy, RetentionPolicy, StorageType, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { BucketLayout, bucketLayout } from '../../lib/bucketLayout';
import { errorMessage } from '../../lib/choria/errors';
import type { RecordSettings } from '../../lib/provision/config/config';
import { RecordResult } from '../../lib/provision/metrics/metrics';

/** Where records are appended: fire and forget, each one's fate told to `onResult`. */
export interface RecordSink {
  /** Appends one record to `subject`; never throws, never waits. */
  append(subject: string, record: object): void;
  /** Records sent and not yet acknowledged or refused. */
  readonly pending: number;
  /** Waits (at most `timeoutMs`) for the records still pending. */
  flush(timeoutMs: number): Promise<void>;
}

/** Options for {@link natsRecordSink}. */
export interface NatsRecordSinkOptions {
  nc: NatsConnection;
  /** How long a write waits for the stream's acknowledgement. Default 2 s. */
  timeoutMs?: number;
  /** Records in flight at most: past it a record is dropped unsent, so a stream that does not answer holds no memory. Default 1,000. */
  maxPending?: number;
  /** Each record's fate; `error` for a failed one. */
  onResult(result: RecordResult, error?: unknown): void;
}

/**
 * Records appended to a JetStream stream over `nc` (DECISIONS P21): a JetStream publish per record,
 * acknowledged by the stream, or refused (the stream full with discard new, no stream leader, no
 * stream, no rights), or unanswered in `timeoutMs`. Nothing waits for it: provisioning goes on
 * whatever the stream does, and each record's fate is counted. A record is never tried again: the
 * next cycle writes the next one.
 */
export function natsRecordSink(options: NatsRecordSinkOptions): RecordSink {
  const { nc, timeoutMs = 2000, maxPending = 1000, onResult } = options;
  // One attempt: a stream that is not there answers "no responders", which nats.js would retry.
  const js = jetstream(nc, { timeout: timeoutMs });
  let pending = 0;
  const inFlight = new Set<Promise<void>>();
  return {
    get pending() {
      return pending;
    },
    append: (subject, record) => {
      if (pending >= maxPending) return onResult('dropped');
      let data: string;
      try {
        data = JSON.stringify(record);
      } catch (error) {
        return onResult('failed', error);
      }
      pending++;
      const write = js
        .publish(subject, data, { timeout: timeoutMs, retries: 0 })
        .then(
          () => onResult('written'),
          (error: unknown) => onResult('failed', error),
        )
        .finally(() => {
          pending--;
          inFlight.delete(write);
        });
      inFlight.add(write);
    },
    flush: async (waitMs) => {
      if (inFlight.size === 0) return;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...inFlight]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, waitMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}

/** What {@link prepareRecordStream} found or did. */
export type RecordStreamState =
  | { readonly kind: 'created'; readonly layout: BucketLayout }
  | { readonly kind: 'exists'; readonly layout: BucketLayout }
  | { readonly kind: 'unknown'; readonly reason: string };

/** The stream configuration rxfleet makes (`rxfleet.records_create`), as `nats stream add` would. */
export function recordStreamConfig(settings: RecordSettings, replicas: number) {
  return {
    name: settings.stream,
    subjects: [`${settings.subject}.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: settings.maxAgeMs * 1_000_000,
    max_bytes: settings.maxBytes > 0 ? settings.maxBytes : -1,
    max_msgs_per_subject: settings.perNode,
    num_replicas: replicas,
    allow_direct: true,
  };
}

/**
 * At start: the records stream's stream info, read through `records_api_prefix`; with
 * `records_create`, the stream made when it is missing, with three replicas on a cluster of
 * brokers (one on a single server) unless `records_replicas` says otherwise. A stream that exists
 * is left as it is. Never throws: a stream that cannot be read or made is `unknown`, with the
 * reason, and records are written all the same (each failure counted) in case it appears.
 */
export async function prepareRecordStream(nc: NatsConnection, settings: RecordSettings, timeoutMs = 5000): Promise<RecordStreamState> {
  try {
    const jsm = await jetstreamManager(nc, { apiPrefix: settings.apiPrefix, checkAPI: false, timeout: timeoutMs });
    try {
      const info = await jsm.streams.info(settings.stream);
      return { kind: 'exists', layout: bucketLayout(settings.stream, info) };
    } catch (error) {
      if (!settings.create || !/stream not found/i.test(errorMessage(error))) throw error;
    }
    const replicas = settings.replicas > 0 ? settings.replicas : nc.info?.cluster !== undefined ? 3 : 1;
    const info = await jsm.streams.add(recordStreamConfig(settings, replicas));
    return { kind: 'created', layout: bucketLayout(settings.stream, info) };
  } catch (error) {
    return { kind: 'unknown', reason: errorMessage(error) };
  }
}
