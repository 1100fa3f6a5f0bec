/**
 * What `rxfleet enrich`'s daemon is given besides its settings and what it hands back: the parts a
 * caller may put in place of the real ones, its status, the setting it refuses. `daemon.ts` starts it.
 */
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { Observable, SchedulerLike } from 'rxjs';
import { IncusReader, IncusStreamItem } from '../../lib/incus/api';
import { Logger } from '../../lib/logger';
import { EnricherStatus } from '../../lib/enricher/pipeline/createEnricher';
import { EventPayload } from '../../lib/enricher/output/payload';
import type { PublisherState } from '../../streams/natsPublisher';
import { Daemon } from '../daemon/contract';

/** What a caller (a spec, a bench, an embedding program) may put in place of the real parts. */
export interface EnrichDaemonOverrides {
  /** Default silent. */
  logger?: Logger;
  /** Default a new one: every metric of the daemon, the enricher and the Incus client lands here. */
  registry?: Registry;
  /** Replaces the REST client (specs and benches with `FakeIncus`). */
  reader?: IncusReader;
  /** Replaces the event websocket. */
  events$?: Observable<IncusStreamItem>;
  /** Where `outputs.stdout` lines go. Default `process.stdout`. */
  stdout?: Writable;
  /** The enricher's scheduler. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /**
   * A consumer in the same process (the provisioner, in `rxfleet provision-incus`): handed every
   * event's payload, in order, before the other outputs; with it, no other output is required.
   */
  consumer?: (payload: EventPayload) => void;
  /** Told each JetStream acknowledgement's latency, seconds (benches: exact percentiles beside the histogram). */
  onAck?: (seconds: number) => void;
}

/** What `/health` and `/ready` say, beside `status`. */
export interface EnrichDaemonStatus extends EnricherStatus {
  /** The Incus server (socket path or https origin). */
  incus: string;
  /** `off` when events are not published to NATS. */
  nats: PublisherState | 'off';
  /** Events held for NATS. */
  held: number;
  /** The JetStream output's connection; `off` without one. */
  jetstream: PublisherState | 'off';
  /** Events not yet acknowledged by the stream. */
  jetstreamHeld: number;
  /**
   * `active` enriches; `standby` waits for the election (`standby:`); `starting` reads back what
   * consumers were told, or waits for NATS, before the first event.
   */
  role: 'starting' | 'active' | 'standby';
  stopping: boolean;
}

/** A running enricher: the daemon contract; it stops by itself only if its event stream ends or its pipeline fails. */
export type EnrichDaemon = Daemon<EnrichDaemonStatus>;

/** A setting the daemon cannot run with (no output at all). */
export class EnrichDaemonError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EnrichDaemonError';
  }
}
