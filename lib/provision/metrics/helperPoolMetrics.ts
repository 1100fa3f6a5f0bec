import { Counter, Gauge, Registry } from 'prom-client';
import { ProvisionerMetrics } from './metrics';

/** Why a persistent helper process was replaced. */
export const HELPER_RESTART_REASONS = ['exit', 'timeout', 'protocol', 'oversize', 'start'] as const;

/** One of {@link HELPER_RESTART_REASONS}. */
export type HelperRestartReason = (typeof HELPER_RESTART_REASONS)[number];

/**
 * The persistent helper's metrics (only with `rxfleet.helper_mode: persistent`), beside the
 * provisioner's: each request is still a helper run for upstream's `helper_time` and
 * `helper_errors`, which this class passes on to {@link ProvisionerMetrics}.
 *
 * Guarantees: every series exists at zero from the start (DECISIONS P2), one per restart reason.
 */
export class HelperPoolMetrics {
  private readonly restarts: Counter<'site' | 'reason'>;
  private readonly processes: Gauge<'site'>;
  private readonly site: string;

  constructor(
    private readonly provisioner: ProvisionerMetrics,
    registry: Registry,
  ) {
    this.site = provisioner.site;
    this.restarts = new Counter({
      name: 'choria_provisioner_helper_restarts_total',
      help: 'Persistent helper processes replaced, by reason: exit (it died), timeout (a request unanswered: hung), protocol (a line that is not an answer, or an unknown id), oversize (a line over the limit), start (could not be started)',
      labelNames: ['site', 'reason'],
      registers: [registry],
    });
    this.processes = new Gauge({
      name: 'choria_provisioner_helper_processes',
      help: 'Persistent helper processes running',
      labelNames: ['site'],
      registers: [registry],
    });
    for (const reason of HELPER_RESTART_REASONS) this.restarts.inc({ site: this.site, reason }, 0);
    this.processes.set({ site: this.site }, 0);
  }

  /** A request answered or failed after `seconds` (upstream's `helper_time`). */
  observeHelper(seconds: number): void {
    this.provisioner.observeHelper(seconds);
  }

  /** A request that failed (upstream's `helper_errors`). */
  helperError(): void {
    this.provisioner.helperError();
  }

  /** A process replaced, and why. */
  helperRestart(reason: HelperRestartReason): void {
    this.restarts.inc({ site: this.site, reason });
  }

  /** Processes running now. */
  setHelperProcesses(running: number): void {
    this.processes.set({ site: this.site }, running);
  }
}
