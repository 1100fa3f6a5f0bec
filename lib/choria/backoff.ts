/**
 * go-choria's backoff tables (`backoff/backoff.go`), in milliseconds, and its jitter. Kept exact so
 * rxfleet retries and campaigns at the same cadence as a Go provisioner beside it.
 */

/** `backoff.FiveSec` (`backoff.Default`): the RPC retry pauses. */
export const FIVE_SEC_BACKOFF_MS: readonly number[] = [500, 750, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000];

/** `backoff.TwentySec`: the election's cadence; saturates at 20 s from the 44th step. */
export const TWENTY_SEC_BACKOFF_MS: readonly number[] = [
  500, 750, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 5500, 5750, 6000, 6500, 7000, 7500, 8000, 8500, 9000, 9500, 10000, 10500,
  10750, 11000, 11500, 12000, 12500, 13000, 13500, 14000, 14500, 15000, 15500, 15750, 16000, 16500, 17000, 17500, 18000, 18500, 19000,
  19500, 20000,
];

/** go-choria's jitter: uniform in [0.5 m, 1.5 m). */
export function jitter(ms: number, random: () => number = Math.random): number {
  return ms / 2 + random() * ms;
}

/**
 * The table's value at `step`, jittered, as go-choria's `Duration(n)` and `For` use it; steps past
 * the end take the last value, negative steps the first.
 */
export function backoffDelay(table: readonly number[], step: number, random: () => number = Math.random): number {
  return jitter(table[Math.min(Math.max(step, 0), table.length - 1)], random);
}
