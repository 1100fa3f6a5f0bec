import { Counter, Gauge, Registry } from 'prom-client';

/** The states a campaign is counted in, as go-choria's election. */
export const ELECTION_STATES = ['candidate', 'leader'] as const;

/** One of {@link ELECTION_STATES}. */
export type ElectionState = (typeof ELECTION_STATES)[number];

/** Options for {@link ElectionMetrics}. */
export interface ElectionMetricsOptions {
  /** The daemon's registry (never prom-client's global one). */
  registry: Registry;
  /** The `election` label: the KV key campaigned for (`provisioner`). */
  election: string;
  /** The `identity` label: this member's identity. */
  identity: string;
}

/**
 * A Choria Streams election's metrics under go-choria's names, help and labels
 * (`providers/election/streams/stats.go`), plus `choria_election_setup_failures_total`
 * (DECISIONS P8: set-up is retried, and each failure is visible).
 *
 * Guarantees: every series, both campaign states included, exists at zero from construction
 * (DECISIONS P2); the labels are bound once.
 */
export class ElectionMetrics {
  private readonly campaignsCounter: Counter<'election' | 'identity' | 'state'>;
  private readonly leaderGauge: Gauge<'election' | 'identity'>;
  private readonly intervalGauge: Gauge<'election' | 'identity'>;
  private readonly setupFailuresCounter: Counter<'election' | 'identity'>;
  private readonly labels: { election: string; identity: string };

  constructor(options: ElectionMetricsOptions) {
    const registers = [options.registry];
    this.labels = { election: options.election, identity: options.identity };
    this.campaignsCounter = new Counter({
      name: 'choria_election_campaigns',
      help: 'The number of campaigns a specific candidate voted in',
      labelNames: ['election', 'identity', 'state'],
      registers,
    });
    this.leaderGauge = new Gauge({
      name: 'choria_election_leader',
      help: 'Indicates if a specific instance is the current leader',
      labelNames: ['election', 'identity'],
      registers,
    });
    this.intervalGauge = new Gauge({
      name: 'choria_election_interval_seconds',
      help: 'The number of seconds between campaigns',
      labelNames: ['election', 'identity'],
      registers,
    });
    this.setupFailuresCounter = new Counter({
      name: 'choria_election_setup_failures_total',
      help: 'Failed attempts to set the election up (bucket status, permissions); each is retried with backoff',
      labelNames: ['election', 'identity'],
      registers,
    });
    for (const state of ELECTION_STATES) this.campaignsCounter.inc({ ...this.labels, state }, 0);
    this.leaderGauge.set(this.labels, 0);
    this.intervalGauge.set(this.labels, 0);
    this.setupFailuresCounter.inc(this.labels, 0);
  }

  /** A campaign tick in `state` (a candidate trying to create the key, a leader refreshing it). */
  campaign(state: ElectionState): void {
    this.campaignsCounter.inc({ ...this.labels, state });
  }

  /** Whether this member leads now. */
  setLeader(leader: boolean): void {
    this.leaderGauge.set(this.labels, leader ? 1 : 0);
  }

  /** The current wait between campaign ticks. */
  setIntervalSeconds(seconds: number): void {
    this.intervalGauge.set(this.labels, seconds);
  }

  /** An election set-up attempt failed (it will be retried). */
  setupFailure(): void {
    this.setupFailuresCounter.inc(this.labels);
  }
}
