import { compareRpmVersions } from './rpmVersion';

/** What the upgrade step (features.upgrades) should do for one node. */
export type UpgradeDecision =
  /** Nothing to do: the feature is off or the helper asked for no version. Go on to configure. */
  | { action: 'none' }
  /** The node already runs the target version (#188): go on to configure. */
  | { action: 'current'; version: string }
  /** Call `release_update`; on success the cycle ends provisioned with no release delay. */
  | { action: 'update'; from: string; to: string; direction: 'upgrade' | 'downgrade' }
  /** The upgrade cannot happen; {@link upgradeFailed} says what that means for the cycle. */
  | { action: 'failed'; error: string };

/** What {@link decideUpgrade} looks at. */
export interface UpgradeInput {
  /** `features.upgrades`. */
  enabled: boolean;
  /** The helper's `upgrade`; empty for none. */
  target: string;
  /** `upgrades_repository`. */
  repository: string;
  /** `upgrades_optional`. */
  optional: boolean;
  /** The inventory's `version`. */
  currentVersion: string;
  /** The inventory's `upgradable`. */
  upgradable: boolean;
}

/**
 * Upstream's `handleHostUpgrade` decision, before any RPC: with the feature on and a target from
 * the helper, a missing repository (unless optional), an inventory without a version or a node that
 * is not upgradable is a failure; otherwise any difference between the versions, RPM-compared, is
 * an update, downgrades included (#210), and equal versions carry on to configure.
 */
export function decideUpgrade(input: UpgradeInput): UpgradeDecision {
  if (!input.enabled || input.target === '') return { action: 'none' };
  if (input.repository === '' && !input.optional)
    return { action: 'failed', error: 'updates_repository not configured for upgrades feature' };
  if (input.currentVersion === '') return { action: 'failed', error: 'did not receive a version in inventory' };
  if (!input.upgradable) return { action: 'failed', error: 'does not support upgrades' };
  const order = compareRpmVersions(input.currentVersion, input.target);
  if (order === 0) return { action: 'current', version: input.currentVersion };
  return { action: 'update', from: input.currentVersion, to: input.target, direction: order < 0 ? 'upgrade' : 'downgrade' };
}

/** How a failed upgrade ends the cycle. */
export type UpgradeFailureOutcome =
  /** upgrades_optional: log `message` as a warning and go on to configure. */
  | { continue: true; message: string }
  /** Otherwise: the cycle fails with `error` (released at once, as any error). */
  | { continue: false; error: string };

/** The error of a `release_update` that failed, in upstream's words (`host.go`: `update to %v failed: %v`). */
export function releaseUpdateError(target: string, cause: string): string {
  return `update to ${target} failed: ${cause}`;
}

/**
 * What a failed upgrade means for the cycle (a `failed` decision's `error`, or
 * {@link releaseUpdateError}): with `upgrades_optional` it warns `Could not upgrade to V,
 * continuing: ...` and configures the node anyway; otherwise the cycle ends in that error.
 */
export function upgradeFailed(error: string, target: string, optional: boolean): UpgradeFailureOutcome {
  return optional ? { continue: true, message: `Could not upgrade to ${target}, continuing: ${error}` } : { continue: false, error };
}
