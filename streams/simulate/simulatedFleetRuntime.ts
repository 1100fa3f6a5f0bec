import type { NatsConnection } from '@nats-io/transport-node';
import { Subject } from 'rxjs';
import { Logger } from '../../lib/logger';
import { SimulatedNode } from '../../lib/simulate/simulatedNode';
import { FleetCounters, FleetEvent, newFleetCounters } from './simulatedFleetStats';

/**
 * What every part of a running simulated fleet shares: its counters, its events, its deferred work
 * and its publishing. Once {@link stop}ped, nothing is published and no deferred work runs, so a
 * restart or a slow reply scheduled before `stop()` cannot reach the connection the caller keeps.
 */
export class SimulatedFleetRuntime {
  /** Counted as things happen; {@link fleetStats} adds the node states. */
  readonly counters: FleetCounters = newFleetCounters();
  /** Every event as it happens; completed by the fleet's `stop()`. */
  readonly events = new Subject<FleetEvent>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private halted = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly logger: Logger,
  ) {}

  /** True once {@link stop} was called. */
  get stopped(): boolean {
    return this.halted;
  }

  /** Tells the events' subscribers that `type` happened to `node`. */
  emit(type: FleetEvent['type'], node: SimulatedNode): void {
    this.events.next({ type, identity: node.identity });
  }

  /** Runs `work` after `ms`, unless the fleet stops first. */
  later(ms: number, work: () => void): void {
    if (this.halted) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.halted) work();
    }, ms);
    this.timers.add(timer);
  }

  /**
   * The broker this fleet is connected to, as go-choria's connector names it in the `seen-by` hop
   * it records on every reply (`nats://host:port`).
   */
  connectedServer(): string {
    return `nats://${this.nc.getServer()}`;
  }

  /** Publishes on the shared connection; a failure is logged, never thrown into a server's work. */
  publish(subject: string, body: string): void {
    if (this.halted || this.nc.isClosed()) return;
    try {
      this.nc.publish(subject, body);
    } catch (error) {
      this.logger.warn({ err: error, subject }, 'could not publish');
    }
  }

  /** Stops publishing and cancels the deferred work. */
  stop(): void {
    this.halted = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }
}
