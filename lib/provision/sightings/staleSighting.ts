import { formatGoDuration } from '../../choria/duration';

/**
 * Whether a sighting waited too long to be worth provisioning (#167): older than twice the
 * discovery interval. Such a sighting is refused rather than worked on; the node is seen again
 * fresh at the next discovery or startup event. Times are milliseconds on one clock.
 */
export function isStaleSighting(sightedAt: number, now: number, intervalMs: number): boolean {
  return now - sightedAt > 2 * intervalMs;
}

/**
 * The refusal for a stale sighting in upstream's words (`skipping node that's been waiting 2m3.5s`),
 * or `undefined` when the sighting is fresh enough to provision.
 */
export function staleSightingError(sightedAt: number, now: number, intervalMs: number): string | undefined {
  return isStaleSighting(sightedAt, now, intervalMs) ? `skipping node that's been waiting ${formatGoDuration(now - sightedAt)}` : undefined;
}
