import { Gauge, Registry } from 'prom-client';
import { CredentialFormat, CredentialInfo, describeCredential, roughSpan } from '../lib/credentialInfo';
import { Logger, silentLogger } from '../lib/logger';
import { SiteFiles } from '../lib/siteFiles';
import { nodeSiteFiles } from './siteFiles';
import { definedFields } from '../lib/definedFields';

/** A credential file a daemon logs in with, and the `kind` label its expiry is exported under. */
export interface WatchedCredential {
  kind: string;
  file: string;
  format: CredentialFormat;
}

/** What a connection tells whoever watches its credentials (see `openNatsConnection`'s `watch`). */
export interface ConnectionWatch {
  /** An attempt to connect is about to be made: the files are read again. */
  attempt(): void;
  /** The broker refused the connection (login or TLS), in its words. */
  refused(reason: string): void;
  /** A connection was established. */
  connected(): void;
  /** The connection was lost. */
  disconnected?(): void;
}

/** Options for {@link CredentialWatch}. */
export interface CredentialWatchOptions {
  credentials: WatchedCredential[];
  logger?: Logger;
  /** Where `rxfleet_credential_expiry_timestamp_seconds{kind}` is registered. */
  registry?: Registry;
  files?: SiteFiles;
  now?: () => number;
  /** How long before an expiry the warning starts. Default 14 days. */
  warnBeforeMs?: number;
}

const DAY = 86_400_000;
const GAUGE = 'rxfleet_credential_expiry_timestamp_seconds';

interface Seen {
  info?: CredentialInfo;
  problem?: string;
  warned?: 'soon' | 'expired';
}

/**
 * Reads a daemon's credential files again at every connection attempt (and whenever `check()` is
 * called), so what is renewed on disk is noticed and described in the log without the secret: the
 * fingerprint, the subject of a certificate, the expiry. Guarantees: each file's first reading and
 * every change is one info line; an unreadable file is one warn line per new problem; a credential
 * within `warnBeforeMs` of its expiry, or past it, is one warn line per fingerprint; the expiry of
 * each kind is exported as `rxfleet_credential_expiry_timestamp_seconds{kind}`; and after a refused
 * connection {@link problem} says why, naming an expired credential when there is one.
 */
export class CredentialWatch implements ConnectionWatch {
  private readonly seen = new Map<string, Seen>();
  private readonly logger: Logger;
  private readonly files: SiteFiles;
  private readonly now: () => number;
  private readonly warnBeforeMs: number;
  private readonly gauge: Gauge | undefined;
  private refusal: string | undefined;
  private up = false;

  constructor(private readonly options: CredentialWatchOptions) {
    this.logger = options.logger ?? silentLogger;
    this.files = options.files ?? nodeSiteFiles;
    this.now = options.now ?? Date.now;
    this.warnBeforeMs = options.warnBeforeMs ?? 14 * DAY;
    const registry = options.registry;
    const existing = registry?.getSingleMetric(GAUGE);
    this.gauge =
      existing instanceof Gauge
        ? existing
        : registry !== undefined
          ? new Gauge({
              name: GAUGE,
              help: 'When each credential the daemon logs in with stops being valid (certificate notAfter, token exp), as read from disk at the last connection attempt',
              labelNames: ['kind'],
              registers: [registry],
            })
          : undefined;
  }

  /** Reads every file again; logs and exports what changed. */
  check(): void {
    for (const credential of this.options.credentials) this.checkOne(credential);
  }

  private checkOne({ kind, file, format }: WatchedCredential): void {
    const seen = this.seen.get(kind) ?? {};
    this.seen.set(kind, seen);
    let info: CredentialInfo;
    try {
      info = describeCredential(format, this.files.read(file));
    } catch (error) {
      const problem = (error as Error).message;
      if (seen.problem !== problem) this.logger.warn({ kind, file }, `cannot read the ${kind} credential ${file}: ${problem}`);
      seen.problem = problem;
      return;
    }
    seen.problem = undefined;
    const expires = info.expiresAt !== undefined ? new Date(info.expiresAt).toISOString() : 'never';
    const fields = { kind, file, fingerprint: info.fingerprint, expires, ...definedFields({ subject: info.subject }) };
    if (seen.info === undefined) {
      this.logger.info(fields, `${kind} credential ${file}: fingerprint ${info.fingerprint}, expires ${expires}`);
    } else if (seen.info.fingerprint !== info.fingerprint) {
      seen.warned = undefined;
      this.logger.info(
        { ...fields, previous: seen.info.fingerprint },
        `${kind} credential ${file} changed on disk: fingerprint ${info.fingerprint}, expires ${expires}`,
      );
    }
    seen.info = info;
    if (info.expiresAt === undefined) {
      this.gauge?.remove({ kind });
      return;
    }
    this.gauge?.set({ kind }, Math.floor(info.expiresAt / 1000));
    const left = info.expiresAt - this.now();
    const state = left <= 0 ? 'expired' : left <= this.warnBeforeMs ? 'soon' : undefined;
    if (state !== undefined && seen.warned !== state) {
      seen.warned = state;
      this.logger.warn(
        fields,
        state === 'expired'
          ? `${kind} credential ${file} expired at ${expires}: the broker will refuse it; renew it on disk (rxfleet reads it again at the next connection)`
          : `${kind} credential ${file} expires in ${roughSpan(left)} (${expires}): renew it on disk`,
      );
    }
  }

  /**
   * Reads the files every `everyMs` too (default an hour), so the warning before an expiry comes
   * even while the connection stays up. Returns what stops it; the timer never holds the process.
   */
  every(everyMs = 3_600_000): () => void {
    const timer = setInterval(() => this.check(), everyMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Reads the files again before a connection attempt. */
  attempt(): void {
    this.check();
  }

  /** Notes a refused connection, for {@link problem}. */
  refused(reason: string): void {
    this.refusal = reason;
  }

  /** A connection was made: nothing is refused any more. */
  connected(): void {
    this.refusal = undefined;
    this.up = true;
  }

  /** The connection was lost: {@link problem} names expired credentials until it is back. */
  disconnected(): void {
    this.up = false;
  }

  /**
   * While not connected: why the broker refuses the daemon (its reason, when it gave one), and every
   * credential that has expired or cannot be read (the likely cause). `undefined` while connected.
   */
  problem(): string | undefined {
    if (this.up) return undefined;
    const causes: string[] = [];
    for (const { kind, file } of this.options.credentials) {
      const seen = this.seen.get(kind);
      if (seen?.problem !== undefined) causes.push(`the ${kind} credential ${file} cannot be read: ${seen.problem}`);
      else if (seen?.info?.expiresAt !== undefined && seen.info.expiresAt <= this.now())
        causes.push(`the ${kind} credential ${file} expired at ${new Date(seen.info.expiresAt).toISOString()}`);
    }
    if (this.refusal === undefined)
      return causes.length > 0 ? `not connected, and ${causes.join('; ')}: the broker will refuse it` : undefined;
    return `the broker refused the connection (${this.refusal})${causes.length > 0 ? `: ${causes.join('; ')}` : ''}`;
  }
}

/** Whether a failed connection attempt was a refusal (login or TLS) rather than an unreachable broker. */
export function isRefusal(reason: string): boolean {
  return /authori[sz]ation|authentication|certificate|handshake|alert|self[- ]signed|unable to verify|expired/i.test(reason);
}
