import type { Outcome } from '@rxfleet/operators';

/**
 * How a cycle that did not fail ended (choria-provisioner.md §3.11), plus `locked`: the node's
 * provisioning lock is held by another provisioner (DECISIONS P10), and `claimed`: in active-active
 * mode another instance holds the node's claim, so no cycle ran (DECISIONS P16).
 */
export type CycleResult = 'provisioned' | 'shutdown' | 'upgraded' | 'locked' | 'claimed';

/** What one provisioning cycle ended with, as the worker pool sees it. */
export type CycleOutcome = Outcome<CycleResult>;
