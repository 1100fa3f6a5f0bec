import { DurableOutput } from './durableOutput';
import { EnrichDaemonStatus } from './daemonTypes';
import { EnricherOutputs } from './outputs';
import { Standby } from './standby';
import { Terms } from './terms';

/** What {@link EnrichHealth} reads. */
export interface HealthParts {
  /** The Incus server (socket path or https origin), or `injected`. */
  incus: string;
  terms: Terms;
  outputs: EnricherOutputs;
  durable: DurableOutput | undefined;
}

/**
 * What /health and /ready read: the enricher's term, the outputs, and the daemon's role and state.
 * Nothing here acts; the daemon sets `standby` once its election runs and `stopping` once it stops.
 */
export class EnrichHealth {
  stopping = false;
  standby: Standby | undefined;

  constructor(private readonly parts: HealthParts) {}

  /** Not stopping, NATS and the JetStream output connected (where used), and the term ready (or the standby set up). */
  readonly ready = (): boolean => {
    const { terms } = this.parts;
    return (
      !this.stopping && this.natsReady() && this.durableReady() && (terms.running ? terms.status().ready : (this.standby?.ready() ?? false))
    );
  };

  readonly status = (): EnrichDaemonStatus => {
    const { terms, outputs, durable, incus } = this.parts;
    return {
      ...terms.status(),
      ready: this.ready(),
      incus,
      nats: outputs.nats(),
      held: outputs.held(),
      jetstream: durable?.status() ?? 'off',
      jetstreamHeld: durable?.held() ?? 0,
      role: this.role(),
      stopping: this.stopping,
    };
  };

  private role(): EnrichDaemonStatus['role'] {
    return this.parts.terms.running ? 'active' : this.standby !== undefined ? 'standby' : 'starting';
  }

  private natsReady(): boolean {
    const { outputs } = this.parts;
    return outputs.nats() === 'off' || outputs.nats() === 'connected';
  }

  private durableReady(): boolean {
    const { durable } = this.parts;
    return durable === undefined || (durable.ready && durable.status() === 'connected');
  }
}
