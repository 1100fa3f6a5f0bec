/**
 * What `rxfleet provision`'s daemon is given and what it hands back: its options and tuning, the
 * setting its parts are started with, its status. `daemon.ts` starts it.
 */
import { Registry } from 'prom-client';
import { Daemon } from '../daemon/contract';
import { Observable, SchedulerLike, asyncScheduler } from 'rxjs';
import { AdmissionLedger, PauseGate, PoolResult } from '@rxfleet/operators';
import { ChoriaClientConfig } from '../../lib/choria/clientConfig';
import { ElectionStore } from '../../lib/election/ElectionStore';
import { ElectionEvent } from '../../lib/election/campaign';
import { Logger, silentLogger } from '../../lib/logger';
import { ConnectionState, FleetConnection } from '../../streams/natsConnection';
import { ProvisionerConfig } from '../../lib/provision/config/config';
import { ProvisionerMetrics } from '../../lib/provision/metrics/metrics';
import { CycleResult } from '../../lib/provision/cycle/cycleResult';
import { HostTicket, Sighting } from '../../lib/provision/sightings/sighting';
import { ClaimStore } from '../../lib/provision/claims/claims';
import { CycleRecord } from '../../lib/provision/records/cycleRecord';
import { EventPayload } from '../../lib/enricher/output/payload';

/** The KV key (and election name) provisioners campaign for, as upstream. */
export const ELECTION_KEY = 'provisioner';
/** The component of the provisioner's own startup event. */
export const PROVISIONER_COMPONENT = 'provisioner';

/**
 * Settings below the configuration file's rules, for tests, the demo and benchmarks: the file
 * insists on an interval of at least a minute, an in-process daemon may run one every 200 ms.
 */
export interface DaemonTuning {
  /** Discovery interval, admission window and stale cut-off base, ms. Default the config's `interval`. */
  intervalMs?: number;
  /** How long a provisioned or shut-down node keeps its key. Default 60 s. */
  settleMs?: number;
  /** How long a node locked by another provisioner keeps its key (P10). Default 2 minutes. */
  lockHoldMs?: number;
  /** Per RPC attempt. Default the Choria config's `discovery_timeout` + the agent's DDL timeout. */
  rpcTimeoutMs?: number;
  /** The retry pauses. Default go-choria's FiveSec table. */
  retryBackoffMs?: readonly number[];
  /** The jitter's randomness. Default `Math.random`. */
  random?: () => number;
  /** Discovery's sliding window and limit, ms. Default 300 and 2000. */
  discoveryIdleMs?: number;
  discoveryTimeoutMs?: number;
  /** The campaign's start splay, announcement delay and set-up retry. Defaults as upstream (5 s, 200 ms). */
  electionStartSplayMs?: number;
  electionAnnounceDelayMs?: number;
  electionSetupRetryMs?: (failures: number) => number;
  /** Active-active: the pause before the `attempt`-th retry of reading the claims bucket. Default 1 s doubling to 30 s. */
  claimsSetupRetryMs?: (attempt: number) => number;
  /** Serve /metrics here instead of `monitor_port` (0: a free port). */
  monitorPort?: number;
  /** The helper's environment. Default this process's. */
  helperEnv?: NodeJS.ProcessEnv;
  /** How often the instance's own provisioning record is written (rxfleet.records), ms. Default 10 s. */
  instanceRecordEveryMs?: number;
  /** Ticks, admission windows, settle delays and retry pauses. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
}

/** Options for {@link startProvisioner}. */
export interface ProvisionerDaemonOptions {
  config: ProvisionerConfig;
  choria: ChoriaClientConfig;
  logger?: Logger;
  /** The daemon's registry; default a new one. Never prom-client's global registry. */
  registry?: Registry;
  /**
   * A connection to use instead of opening one from the configuration (the demo's in-memory
   * transport, tests sharing a server). The daemon does not drain a connection it was given.
   */
  connection?: FleetConnection;
  /** The election's bucket; default the Choria Streams bucket over the connection. */
  electionStore?: ElectionStore;
  /** Active-active's claims bucket; default the KV bucket `rxfleet.claims_bucket` over the connection. */
  claimStore?: ClaimStore;
  /** Reported in the startup event. Default `0.0.0`. */
  version?: string;
  /**
   * prom-client's process and Node.js series (`process_*`, `nodejs_*`) on the daemon's registry, as
   * upstream's endpoint carries Go's process collector. Default true; off for several daemons
   * sharing one process (the demo), where the figures would be the same process's twice.
   */
  processMetrics?: boolean;
  /**
   * Enriched Incus events handed over in-process (`rxfleet provision-incus` runs the enricher in
   * the same process): the Incus feed reads these instead of the enricher's NATS subjects, with
   * `rxfleet.incus` or, when the file has no such section, every default.
   */
  incusEvents?: Observable<EventPayload>;
  /**
   * Another part of the same process that /ready waits for and /health describes under `name`
   * (the enricher, in `rxfleet provision-incus`).
   */
  companion?: { name: string; ready(): boolean; status(): object };
  tuning?: DaemonTuning;
}

/** What every part of the daemon is started with, read once from its options. */
export interface DaemonSetting {
  readonly config: ProvisionerConfig;
  readonly choria: ChoriaClientConfig;
  readonly tuning: DaemonTuning;
  readonly logger: Logger;
  /** The daemon's registry: the options', or a new one. */
  readonly registry: Registry;
  readonly scheduler: SchedulerLike;
  /** This instance: its Choria identity. */
  readonly identity: string;
  /** The discovery interval in use: the tuning's, else the file's. */
  readonly intervalMs: number;
  /** Reported in the startup event and the records. */
  readonly version: string;
}

/** The setting of the daemon `options` start, each default filled in. */
export function daemonSetting(options: ProvisionerDaemonOptions): DaemonSetting {
  const { config, choria, tuning = {} } = options;
  return {
    config,
    choria,
    tuning,
    logger: options.logger ?? silentLogger,
    registry: options.registry ?? new Registry(),
    scheduler: tuning.scheduler ?? asyncScheduler,
    identity: choria.identity,
    intervalMs: tuning.intervalMs ?? config.intervalMs,
    version: options.version ?? '0.0.0',
  };
}

/** What a running provisioner is doing, for /health, /ready, the demo and tests. */
export interface ProvisionerStatus {
  state: 'running' | 'stopping' | 'stopped';
  connection: ConnectionState;
  paused: boolean;
  /** With leader_election: whether this instance leads. Without: always false. */
  leader: boolean;
  /** With leader_election: whether the election is set up (its bucket's TTL read). */
  electionReady: boolean;
  busyWorkers: number;
  /** Identities held by admission (queued, running or settling). */
  held: number;
  /** Admitted, not yet started. */
  queued: number;
  /** Nodes whose last cycles failed, waiting out their backoff (P22). */
  failing: number;
}

/** A running provisioner: the daemon contract, and what the demo, specs and benches watch it by. */
export interface ProvisionerDaemon extends Daemon<ProvisionerStatus> {
  readonly identity: string;
  readonly metrics: ProvisionerMetrics;
  /** The pause state every reader shares (the election drives it; tests may too). */
  readonly gate: PauseGate;
  readonly ledger: AdmissionLedger<Sighting, string>;
  /** Every finished cycle (and every skipped stale ticket). Completes when the daemon stops. */
  readonly results$: Observable<PoolResult<HostTicket, CycleResult>>;
  /** Every cycle's record (P21) as it is made, whether or not `rxfleet.records` writes it. Completes when the daemon stops. */
  readonly cycles$: Observable<CycleRecord>;
  /** Election events as they happen (never emits without leader_election). Completes on stop. */
  readonly election$: Observable<ElectionEvent>;
}
