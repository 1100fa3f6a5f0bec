import { Counter, Gauge, Registry } from 'prom-client';
import { ClaimHooks } from './claims';

/**
 * How a claim went: `won` (this instance provisions the node), `lost` (another holds it), `lapsed`
 * (lost during the cycle), `kept` (its node, which may hold this instance's configuration, did not
 * answer: the claim kept and the cycle run again; once per run).
 */
export const CLAIM_RESULTS = ['won', 'lost', 'lapsed', 'kept'] as const;
/** What a failed claims-bucket operation was. */
export const CLAIM_OPERATIONS = ['setup', 'create', 'refresh', 'release'] as const;

/** Options for {@link ClaimMetrics}. */
export interface ClaimMetricsOptions {
  registry: Registry;
  site: string;
  /** This instance's identity: instances of one site are told apart by it, as the election's metrics are. */
  identity: string;
}

/**
 * Active-active's metrics (only with `rxfleet.mode: active-active`, DECISIONS P16): how many claims
 * each instance won, lost and let lapse, how many it holds, and the bucket operations that failed.
 * Every series exists at zero from the start (P2). The `identity` label tells instances of one
 * site apart, so a dashboard can sum them or show each.
 */
export class ClaimMetrics {
  private readonly claims: Counter<'site' | 'identity' | 'result'>;
  private readonly errors: Counter<'site' | 'identity' | 'operation'>;
  private readonly held: Gauge<'site' | 'identity'>;
  private readonly labels: { site: string; identity: string };

  constructor(options: ClaimMetricsOptions) {
    const registers = [options.registry];
    this.labels = { site: options.site, identity: options.identity };
    this.claims = new Counter({
      name: 'choria_provisioner_claims_total',
      help: "Claims on nodes by this instance (active-active): won (it provisions the node), lost (another instance holds it), lapsed (lost while its cycle ran, which was stopped), kept (a run of a cycle whose node may hold this instance's configuration and did not answer: the claim kept, the cycle run again)",
      labelNames: ['site', 'identity', 'result'],
      registers,
    });
    this.errors = new Counter({
      name: 'choria_provisioner_claim_errors_total',
      help: 'Claims bucket operations that failed (active-active): setup (reading its TTL), create, refresh, release',
      labelNames: ['site', 'identity', 'operation'],
      registers,
    });
    this.held = new Gauge({
      name: 'choria_provisioner_claims_held',
      help: 'Claims this instance holds now (its cycles in flight, active-active)',
      labelNames: ['site', 'identity'],
      registers,
    });
    for (const result of CLAIM_RESULTS) this.claims.inc({ ...this.labels, result }, 0);
    for (const operation of CLAIM_OPERATIONS) this.errors.inc({ ...this.labels, operation }, 0);
    this.held.set(this.labels, 0);
  }

  /** A claim won, lost or lapsed. */
  claim(result: (typeof CLAIM_RESULTS)[number]): void {
    this.claims.inc({ ...this.labels, result });
  }

  /** A failed bucket operation. */
  error(operation: (typeof CLAIM_OPERATIONS)[number]): void {
    this.errors.inc({ ...this.labels, operation });
  }

  /** Claims held now. */
  setHeld(count: number): void {
    this.held.set(this.labels, count);
  }

  /** The claim stage's hooks that count; the daemon adds its log lines. */
  hooks(): Required<Pick<ClaimHooks, 'won' | 'lost' | 'held' | 'kept'>> {
    return {
      won: () => this.claim('won'),
      lost: () => this.claim('lost'),
      held: (n) => this.setHeld(n),
      kept: () => this.claim('kept'),
    };
  }
}
