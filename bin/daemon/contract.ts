/**
 * The one shape every rxfleet daemon has (`provision`, `enrich`, and the two together in
 * `provision-incus`), so that {@link runDaemon} and every caller (the demo, specs, benches) run
 * them the same way.
 */
import { Registry } from 'prom-client';

/** How a daemon's run ended. */
export interface StopReport {
  /** Work still in flight when the grace period ended, aborted (a provisioner's cycles; the enricher has none). */
  abandoned: number;
  /**
   * Set when the daemon stopped by itself rather than being asked to: why (its pipeline failed, which
   * is a bug; the Incus event stream ended). The command exits non-zero, so a supervisor restarts it.
   */
  failed?: string;
}

/** Options of {@link Daemon.stop}. */
export interface StopOptions {
  /** How long work in flight may take to finish; the daemon's own setting by default. */
  graceMs?: number;
}

/** A running daemon. */
export interface Daemon<Status extends object = object> {
  /** The port /metrics, /health and /ready are served on, or `undefined` when the endpoint is off. */
  readonly port: number | undefined;
  /** Every series the daemon exports. Never prom-client's global registry. */
  readonly registry: Registry;
  /** What `/ready` answers: connected, set up, and not stopping. */
  ready(): boolean;
  /** What `/health` describes. */
  status(): Status;
  /**
   * DECISIONS P9: take no new work, let work in flight finish within the grace period, abort the
   * rest, close the endpoint and the connections the daemon opened. Idempotent: every call gets the
   * same report, which {@link stopped} also resolves with.
   */
  stop(options?: StopOptions): Promise<StopReport>;
  /**
   * Ends work in flight at once, synchronously, so nothing the daemon started (a helper's process
   * group) outlives a process about to exit on a second signal or a crash.
   */
  abort(reason?: string): void;
  /** Resolves once the daemon has stopped, whether asked to or by itself. */
  readonly stopped: Promise<StopReport>;
}
