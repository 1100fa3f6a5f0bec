/**
 * The durable outputs' settings (`outputs.jetstream`, `outputs.state`, `standby`) from a
 * configuration the schema has accepted: defaults applied, durations in milliseconds, sizes in
 * bytes, and what the keys mean together checked (a JetStream output needs a server; the state
 * bucket needs the stream; a standby needs the bucket).
 */
import { parseGoDuration } from '../../duration';
import { splitNatsUrls } from '../../addresses';
import { parseByteSize } from './byteSize';
import { DURABLE_DEFAULTS } from './durableSchema';

/** How a NATS connection of the enricher is made. */
export interface NatsConnectionSettings {
  servers: string[];
  name: string;
  user?: string;
  password?: string;
  token?: string;
  /** A NATS `.creds` file. */
  credentials?: string;
  tls?: { ca?: string; cert?: string; key?: string };
}

/** `outputs.jetstream`: events published with acknowledgements to a stream. */
export interface JetStreamOutputSettings extends NatsConnectionSettings {
  subjectPrefix: string;
  /** The stream that captures `<subjectPrefix>.>`. */
  stream: string;
  /** Create the stream when it is missing. */
  create: boolean;
  /** For a stream the enricher creates. */
  replicas: number;
  /** For a stream the enricher creates, ms; 0 keeps events for ever. */
  maxAge: number;
  /** For a stream the enricher creates, bytes; 0 is no limit. */
  maxBytes: number;
  /** For a stream the enricher creates, ms. */
  duplicateWindow: number;
  /** Events waiting to be sent (beyond it the oldest waiting are dropped, each object's last word kept). */
  maxHeld: number;
  /** Events sent and not yet acknowledged, at most. */
  maxPending: number;
  /** How long a publish waits for its acknowledgement before it is sent again, ms. */
  ackTimeout: number;
}

/** `outputs.state`: each instance's latest record in a KV bucket. */
export interface StateOutputSettings {
  bucket: string;
  create: boolean;
  replicas: number;
}

/** `standby`: one of a pair on the same Incus server, elected. */
export interface StandbySettings {
  bucket: string;
  key: string;
  /** Undefined: the host name (the daemon fills it in). */
  identity: string | undefined;
  /** The election bucket's TTL when the enricher creates it, ms. */
  ttl: number;
  create: boolean;
  replicas: number;
}

/** The raw keys, as the schema accepted them. */
export interface RawConnection {
  url?: string;
  name?: string;
  user?: string;
  password?: string;
  token?: string;
  credentials?: string;
  tls?: { ca?: string; cert?: string; key?: string };
}

/** `outputs.jetstream` as written. */
export interface RawJetStream extends RawConnection {
  subject_prefix?: string;
  stream?: string;
  create?: boolean;
  replicas?: number;
  max_age?: string | 0;
  max_bytes?: string | number;
  duplicate_window?: string | 0;
  max_held?: number;
  max_pending?: number;
  ack_timeout?: string | 0;
}

/** The durable keys as written. */
export interface RawDurable {
  nats?: RawConnection & { subject_prefix?: string };
  jetstream?: RawJetStream;
  state?: { bucket?: string; create?: boolean; replicas?: number };
  standby?: { bucket?: string; key?: string; identity?: string; ttl?: string | 0; create?: boolean; replicas?: number };
}

/** The durable outputs' settings, or the problems that stop them, each `key: message`. */
export interface DurableSettings {
  jetstream?: JetStreamOutputSettings;
  state?: StateOutputSettings;
  standby?: StandbySettings;
  problems: string[];
}

const ms = (value: string | 0 | undefined, fallback: string): number =>
  value === 0 ? 0 : Math.round(parseGoDuration(String(value ?? fallback)));

/** A connection's settings from its keys; `fallback` gives what they leave out (the core output's). */
export function connectionSettings(raw: RawConnection, fallback?: RawConnection): NatsConnectionSettings {
  const own = raw.url !== undefined;
  const source = own ? raw : (fallback ?? {});
  const { servers, credentials } = splitNatsUrls(source.url ?? '');
  const user = (own ? raw.user : (raw.user ?? source.user)) ?? credentials?.user;
  const password = (own ? raw.password : (raw.password ?? source.password)) ?? credentials?.password;
  const token = own ? raw.token : (raw.token ?? source.token);
  const creds = own ? raw.credentials : (raw.credentials ?? source.credentials);
  const tls = own ? raw.tls : (raw.tls ?? source.tls);
  return {
    servers,
    name: raw.name ?? 'rxfleet-enrich',
    ...(user !== undefined ? { user } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(creds !== undefined ? { credentials: creds } : {}),
    ...(tls !== undefined ? { tls: { ...tls } } : {}),
  };
}

/**
 * The durable outputs' settings from keys the schema accepted. Problems are returned, not thrown,
 * so that one run names every problem of the file.
 */
export function durableSettings(raw: RawDurable, corePrefix: string | undefined): DurableSettings {
  const problems: string[] = [];
  const out: DurableSettings = { problems };
  const js = raw.jetstream;
  if (js !== undefined) {
    const connection = connectionSettings(js, raw.nats);
    if (connection.servers.length === 0) problems.push('outputs.jetstream.url: required to publish to JetStream (or outputs.nats.url)');
    const subjectPrefix = js.subject_prefix ?? 'incus.events';
    if (
      corePrefix !== undefined &&
      (corePrefix === subjectPrefix || corePrefix.startsWith(`${subjectPrefix}.`) || subjectPrefix.startsWith(`${corePrefix}.`))
    )
      problems.push(
        `outputs.jetstream.subject_prefix: ${subjectPrefix} overlaps outputs.nats.subject_prefix ${corePrefix}: the stream would keep each event twice, and a JetStream publish reaches core subscribers anyway; give them different prefixes or drop outputs.nats`,
      );
    const maxAge = ms(js.max_age, DURABLE_DEFAULTS.max_age);
    const duplicateWindow = ms(js.duplicate_window, DURABLE_DEFAULTS.duplicate_window);
    if (duplicateWindow < 100) problems.push('outputs.jetstream.duplicate_window: must be at least 100ms');
    if (maxAge > 0 && duplicateWindow > maxAge) problems.push('outputs.jetstream.duplicate_window: must not be longer than max_age');
    const ackTimeout = ms(js.ack_timeout, DURABLE_DEFAULTS.ack_timeout);
    if (ackTimeout < 100) problems.push('outputs.jetstream.ack_timeout: must be at least 100ms');
    out.jetstream = {
      ...connection,
      subjectPrefix,
      stream: js.stream ?? DURABLE_DEFAULTS.stream,
      create: js.create ?? false,
      replicas: js.replicas ?? DURABLE_DEFAULTS.replicas,
      maxAge,
      maxBytes: parseByteSize(js.max_bytes ?? DURABLE_DEFAULTS.max_bytes),
      duplicateWindow,
      maxHeld: js.max_held ?? DURABLE_DEFAULTS.max_held,
      maxPending: js.max_pending ?? DURABLE_DEFAULTS.max_pending,
      ackTimeout,
    };
  }
  if (raw.state !== undefined) {
    if (js === undefined) problems.push('outputs.state: needs outputs.jetstream (the bucket follows what the stream acknowledged)');
    out.state = {
      bucket: raw.state.bucket ?? DURABLE_DEFAULTS.state_bucket,
      create: raw.state.create ?? false,
      replicas: raw.state.replicas ?? DURABLE_DEFAULTS.replicas,
    };
  }
  const standby = raw.standby;
  if (standby !== undefined) {
    if (raw.state === undefined) problems.push('standby: needs outputs.state (the standby is kept warm from the state bucket)');
    const ttl = ms(standby.ttl, DURABLE_DEFAULTS.election_ttl);
    if (ttl < 1000 || ttl > 3_600_000) problems.push('standby.ttl: must be between 1s and 1h');
    out.standby = {
      bucket: standby.bucket ?? DURABLE_DEFAULTS.election_bucket,
      key: standby.key ?? DURABLE_DEFAULTS.election_key,
      identity: standby.identity,
      ttl,
      create: standby.create ?? false,
      replicas: standby.replicas ?? DURABLE_DEFAULTS.replicas,
    };
  }
  return out;
}
