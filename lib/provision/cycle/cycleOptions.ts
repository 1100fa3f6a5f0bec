import { Observable, SchedulerLike } from 'rxjs';
import { PauseGate } from '@rxfleet/operators';
import { ActionSpec } from '../../choria/agents';
import { Logger } from '../../logger';
import { SiteFiles } from '../../siteFiles';
import { ProvisionerConfig } from '../config/config';
import { HelperInput } from '../helper/helperInput';
import { HelperResponse } from '../helper/helperResponse';
import { ProvisionerRpc } from '../metrics/metrics';
import type { CycleTraces } from './cycleTrace';

/** One attempt of one RPC, as {@link ChoriaRpcClient.call} makes it. */
export interface CycleRpcClient {
  call<I extends object, O>(
    spec: ActionSpec<I, O>,
    identity: string,
    input: I,
    options?: { signal?: AbortSignal; timeoutMs?: number },
  ): Observable<{ data: O; statuscode: number; statusmsg: string }>;
}

/** The helper, as {@link HelperRunner} runs it (it counts `helper_time` and `helper_errors` itself). */
export interface CycleHelper {
  run(input: HelperInput, signal?: AbortSignal): Promise<HelperResponse>;
}

/** Where a cycle's RPCs and outcomes are counted: {@link ProvisionerMetrics} fits. */
export interface CycleMetrics {
  observeRpc(rpc: ProvisionerRpc, seconds: number): void;
  rpcError(rpc: ProvisionerRpc): void;
  helperShutdownRequest(): void;
  lockRefused(): void;
}

/** The settings a cycle reads; a {@link ProvisionerConfig} fits. */
export type CycleSettings = Pick<
  ProvisionerConfig,
  | 'token'
  | 'intervalMs'
  | 'features'
  | 'jwtVerifyCert'
  | 'jwtSigningKey'
  | 'jwtSigningToken'
  | 'serverJwtValidityMs'
  | 'certDenyList'
  | 'upgradesRepository'
  | 'upgradesOptional'
>;

/** Options for {@link ProvisionCycle}. */
export interface ProvisionCycleOptions {
  config: CycleSettings;
  client: CycleRpcClient;
  helper: CycleHelper;
  /** Where `jwt_verify_cert`, `jwt_signing_key` and `jwt_signing_token` are read from, on every cycle. */
  files: SiteFiles;
  /** Read before and inside every RPC attempt (and by the helper runner, which holds the same gate). */
  gate?: PauseGate;
  metrics?: CycleMetrics;
  /**
   * The attempt boundary of active-active (DECISIONS P20): before each RPC attempt the cycle waits
   * for this to emit (the node's claim confirmed by the bucket). Default: no wait.
   */
  beforeAttempt?: (identity: string) => Observable<void>;
  /** Where each cycle's steps are noted for its record (P21). Default: not noted. */
  traces?: CycleTraces;
  /** Per attempt; default the client's (discovery timeout + the agent's DDL timeout). */
  rpcTimeoutMs?: number;
  /** The retry pauses' table; default go-choria's FiveSec. */
  backoffMs?: readonly number[];
  random?: () => number;
  /** Times the retry pauses. Default `asyncScheduler`. */
  scheduler?: SchedulerLike;
  /** The clock admission timed sightings by (stale check), ms. Default `scheduler.now()`. */
  clock?: () => number;
  /** The wall clock JWTs are checked and signed with, ms. Default `Date.now`. */
  wallClock?: () => number;
  logger?: Logger;
}

/** What a cycle is given about its node. */
export interface CycleSighting {
  identity: string;
  /** When admission timed the sighting, on the `clock` of the cycle. */
  sightedAt: number;
}
