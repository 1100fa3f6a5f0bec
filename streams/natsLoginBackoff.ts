import type { Authenticator, NatsConnection } from '@nats-io/transport-node';

/** Options for {@link LoginBackoff}. */
export interface LoginBackoffOptions {
  /** The wait between attempts while the broker cannot be reached; jittered up to twice it. Default 250 ms. */
  baseMs?: number;
  /** The first wait after a refused login; it doubles with each refusal in a row. Default 1 s. */
  refusedMs?: number;
  /** The longest wait after refusals. Default 30 s. */
  maxMs?: number;
  /** In [0, 1). Default `Math.random`. */
  random?: () => number;
}

/**
 * The wait between a daemon's connection attempts, for nats.js's `reconnectDelayHandler`: short
 * while the broker cannot be reached (a quarter to half a second: it may be restarting, and the
 * daemon should be back within a second of it), growing while the broker is reached and refuses
 * the login (1 s, 2 s, 4 s ... 30 s), so a daemon with a wrong or expired credential keeps trying
 * for ever without hammering the broker, and a fixed credential is picked up within 30 s.
 *
 * How it knows: nats.js calls every authenticator once per CONNECT it sends, that is once per
 * attempt that reached the broker and got its INFO; {@link observer} notes it. An attempt that sent
 * a CONNECT and is still followed by another attempt was refused. {@link connected} (a connection
 * was established) starts the count again.
 */
export class LoginBackoff {
  private refusals = 0;
  private loginSent = false;
  private readonly baseMs: number;
  private readonly refusedMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;

  constructor(options: LoginBackoffOptions = {}) {
    this.baseMs = options.baseMs ?? 250;
    this.refusedMs = options.refusedMs ?? 1000;
    this.maxMs = options.maxMs ?? 30_000;
    this.random = options.random ?? Math.random;
  }

  /** An authenticator that adds nothing to the CONNECT and notes that one was sent. */
  readonly observer: Authenticator = () => {
    this.loginSent = true;
  };

  /** Refused logins since the last connection. */
  get refused(): number {
    return this.refusals;
  }

  /**
   * The wait before the next attempt. nats.js asks before every attempt and while it waits, so the
   * answer changes only when an attempt has been made since.
   */
  readonly delay = (): number => {
    if (this.loginSent) {
      this.loginSent = false;
      this.refusals++;
    }
    if (this.refusals === 0) return this.baseMs + Math.floor(this.random() * this.baseMs);
    const wait = Math.min(this.maxMs, this.refusedMs * 2 ** (this.refusals - 1));
    return Math.floor(wait * (1 + 0.1 * this.random()));
  };

  /** The longest the next wait can be as things stand (for log lines: it changes no state). */
  ceilingMs(): number {
    const refusals = this.refusals + (this.loginSent ? 1 : 0);
    if (refusals === 0) return 2 * this.baseMs;
    return Math.floor(Math.min(this.maxMs, this.refusedMs * 2 ** (refusals - 1)) * 1.1);
  }

  /** A connection was established: refusals start again from none. */
  connected(): void {
    this.refusals = 0;
    this.loginSent = false;
  }

  /** Calls {@link connected} on every reconnection of `nc`, until it closes. */
  follow(nc: NatsConnection): void {
    this.connected();
    void (async () => {
      for await (const status of nc.status()) if (status.type === 'reconnect') this.connected();
    })();
  }
}
