import { AdmissionLedger, PauseGate } from '@rxfleet/operators';
import { NodeBackoff } from '../../lib/provision/backoff/nodeBackoff';
import { Sighting } from '../../lib/provision/sightings/sighting';
import { MonitorEndpoint } from '../../streams/monitorEndpoint';
import { serveDaemonEndpoint } from '../daemon/endpoint';
import { BrokerConnection } from './connect';
import { DaemonSetting, ProvisionerDaemonOptions, ProvisionerStatus } from './daemonTypes';
import { FleetSharing } from './fleetSharing';

/**
 * What /health and /ready read: the daemon's parts as they come up, and its state as it stops.
 * Nothing here acts; the daemon sets each part once it is started.
 */
export class ProvisionerHealth {
  state: ProvisionerStatus['state'] = 'running';
  busyWorkers = 0;
  broker: BrokerConnection | undefined;
  sharing: FleetSharing = {};

  constructor(
    private readonly setting: DaemonSetting,
    private readonly held: { gate: PauseGate; ledger: AdmissionLedger<Sighting, string>; backoff: NodeBackoff | undefined },
    private readonly companion: ProvisionerDaemonOptions['companion'],
  ) {}

  /** Running, connected, the election set up (with leader_election), the claims bucket read (active-active), the companion ready. */
  readonly ready = (): boolean => {
    const { election, activeActive } = this.sharing;
    return (
      this.state === 'running' &&
      this.broker?.connection.state === 'connected' &&
      (election?.ready() ?? !this.setting.config.leaderElection) &&
      (activeActive?.ready() ?? true) &&
      (this.companion?.ready() ?? true)
    );
  };

  readonly status = (): ProvisionerStatus => {
    const { gate, ledger, backoff } = this.held;
    const { election } = this.sharing;
    return {
      state: this.state,
      connection: this.broker?.connection.state ?? 'disconnected',
      paused: gate.paused,
      leader: election?.leads() ?? false,
      electionReady: election?.ready() ?? false,
      busyWorkers: this.busyWorkers,
      held: ledger.held,
      queued: ledger.queued,
      failing: backoff?.failing ?? 0,
    };
  };

  /** The status, and the companion's under its name, as /health shows them. */
  readonly describe = (): object =>
    this.companion === undefined ? this.status() : { ...this.status(), [this.companion.name]: this.companion.status() };

  /**
   * The monitor endpoint (/metrics, /health, /ready) on `monitor_port` or the tuning's port, on
   * `rxfleet.monitor_host`; undefined when neither asks for one.
   */
  async serve(): Promise<MonitorEndpoint | undefined> {
    const { config, tuning, registry, logger } = this.setting;
    const port = tuning.monitorPort ?? (config.monitorPort > 0 ? config.monitorPort : undefined);
    if (port === undefined) return undefined;
    const address = { port, host: config.rxfleet.monitorHost };
    return serveDaemonEndpoint({
      address,
      registry,
      ready: this.ready,
      status: this.describe,
      login: () => this.broker?.watch?.problem(),
      logger,
    });
  }
}
