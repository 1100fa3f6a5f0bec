import type { NatsConnection } from '@nats-io/transport-node';
import { PauseGate } from '@rxfleet/operators';
import { ElectionMetrics } from '../../lib/choria/electionMetrics';
import { ElectionStore } from '../../lib/election/ElectionStore';
import { ClaimStore } from '../../lib/provision/claims/claims';
import { ActiveActive, startActiveActive } from './activeActive';
import { DaemonSetting } from './daemonTypes';
import { Election, startElection } from './election';

/** How this instance shares the fleet with other provisioners: by an election, by claims, or not at all. */
export interface FleetSharing {
  /** `leader_election`: only the leader provisions. */
  readonly election?: Election | undefined;
  /** `rxfleet.mode: active-active`: every instance provisions, each node under a claim (P16). */
  readonly activeActive?: ActiveActive | undefined;
}

/** Starts the election or active-active's claims, as the file asks (it never asks for both). */
export function shareFleet(
  setting: DaemonSetting,
  parts: {
    nc: NatsConnection;
    gate: PauseGate;
    electionMetrics: ElectionMetrics | undefined;
    electionStore?: ElectionStore | undefined;
    claimStore?: ClaimStore | undefined;
  },
): FleetSharing {
  const { config, identity, logger, scheduler, registry, intervalMs, tuning } = setting;
  const { nc, gate, electionMetrics } = parts;
  if (electionMetrics !== undefined) {
    const { electionApiPrefix: apiPrefix, electionCandidateIntervalMs: maxCandidateIntervalMs } = config.rxfleet;
    const store = parts.electionStore;
    return {
      election: startElection({
        identity,
        nc,
        store,
        apiPrefix,
        maxCandidateIntervalMs,
        gate,
        metrics: electionMetrics,
        logger,
        scheduler,
        tuning,
      }),
    };
  }
  if (config.rxfleet.mode !== 'active-active') return {};
  const { claimsSetupRetryMs: setupRetryMs, random } = tuning;
  const store = parts.claimStore;
  return {
    activeActive: startActiveActive({ config, identity, nc, gate, registry, logger, scheduler, intervalMs, store, setupRetryMs, random }),
  };
}
