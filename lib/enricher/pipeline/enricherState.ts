/**
 * What the daemon reads off a running enricher (`status()`, `ready$`), kept from what the pipeline
 * says as it runs: the stream connecting and disconnecting, the owner's notices, the line's length.
 */
import { BehaviorSubject, Observable, distinctUntilChanged } from 'rxjs';
import { Logger } from '../../logger';
import { EnricherMetrics } from '../metrics/metrics';
import { FleetModel } from '../model/FleetModel';
import { OwnerNotice } from '../owner/fleetOwner';

/** What the daemon reads off a running enricher. */
export interface EnricherStatus {
  connected: boolean;
  /** The model can place instances on networks (the first round's networks landed, or a cold store was loaded). */
  warm: boolean;
  ready: boolean;
  /** Events in the ordered line. */
  line: number;
  projects: number;
  instances: number;
  networks: number;
  /** Instances last read running with a NIC and no address (read again, backing off). */
  awaitingAddress: number;
  /**
   * The cold store: `off` (none configured), `ok`, or `stale` from a failed write until a retry
   * lands. A stale store does not make the enricher unready: events still flow; only a restart
   * would start from an older model.
   */
  coldStore: 'off' | 'ok' | 'stale';
}

/** One enricher's state as the daemon sees it, and the metrics that say the same. */
export class EnricherState {
  private readonly readyNow = new BehaviorSubject(false);
  /** Connected and warm: what `/ready` answers. Replays the current value. */
  readonly ready$: Observable<boolean> = this.readyNow.pipe(distinctUntilChanged());
  private connected = false;
  private warm = false;
  private awaitingAddress = 0;
  private line = 0;

  constructor(
    private readonly metrics: EnricherMetrics,
    private readonly logger: Logger,
    /** The model of the run under way. */
    private readonly model: () => FleetModel,
  ) {}

  /** A run starts, warm (from a cold store, or from what consumers were told) or cold. */
  start(warm: boolean): void {
    this.warm = warm;
    this.metrics.warm.set(warm ? 1 : 0);
  }

  /** The event stream connected or disconnected. */
  connection(up: boolean): void {
    this.connected = up;
    this.metrics.connected.set(up ? 1 : 0);
    if (up) this.logger.info('event stream connected');
    this.tellReady();
  }

  /** What the owner says besides its entries: the model warmed, a round ended, instances awaiting an address. */
  notice(notice: OwnerNotice): void {
    if (notice.kind === 'round-end') this.roundEnded(notice);
    else if (notice.kind === 'awaiting-address') this.awaitingAddress = notice.instances;
    else {
      this.warm = true;
      this.metrics.warm.set(1);
      this.tellReady();
    }
  }

  /** The ordered line holds `length` entries. */
  lineLength(length: number): void {
    this.metrics.lineLength.set((this.line = length));
  }

  /** Says whether the enricher is ready (connected and warm) now. */
  tellReady(): void {
    this.readyNow.next(this.connected && this.warm);
  }

  /** The run is over: nothing in the line, never ready again. */
  end(): void {
    this.lineLength(0);
    this.readyNow.next(false);
    this.readyNow.complete();
  }

  status(coldStore: EnricherStatus['coldStore']): EnricherStatus {
    const { connected, warm, line, awaitingAddress } = this;
    const model = this.model();
    const [projects, instances, networks] = [model.projectCount, model.instanceCount, model.networkCount];
    return { connected, warm, ready: connected && warm, line, projects, instances, networks, awaitingAddress, coldStore };
  }

  private roundEnded(end: Extract<OwnerNotice, { kind: 'round-end' }>): void {
    this.metrics.sweeps.labels(end.ok ? 'success' : 'failed').inc();
    const model = this.model();
    if (end.ok)
      this.logger.info(
        { round: end.round, projects: model.projectCount, instances: model.instanceCount, networks: model.networkCount },
        'round over the fleet done',
      );
    else this.logger.warn({ round: end.round, err: end.error }, 'round over the fleet failed: retrying soon');
  }
}
