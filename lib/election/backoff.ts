/**
 * go-choria's backoff tables (`backoff/backoff.go`), in milliseconds, and its jitter. Kept exact
 * so an rxfleet instance campaigns at the same cadence as a Go one beside it.
 */

/** `backoff.TwentySec`: saturates at 20 s from the 44th try. */
export const TWENTY_SEC_MS: readonly number[] = [
  500, 750, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 5500, 5750, 6000, 6500, 7000, 7500, 8000, 8500, 9000, 9500, 10000, 10500,
  10750, 11000, 11500, 12000, 12500, 13000, 13500, 14000, 14500, 15000, 15500, 15750, 16000, 16500, 17000, 17500, 18000, 18500, 19000, 19500,
  20000,
];

/**
 * The table's value for `tries`, jittered uniformly into [0.5x, 1.5x) as go-choria does
 * (`m/2 + rand(m)`); `tries` past the end of the table take its last value.
 */
export function backoffDelay(table: readonly number[], tries: number, random: () => number = Math.random): number {
  const nominal = table[Math.min(Math.max(tries, 0), table.length - 1)];
  return nominal / 2 + random() * nominal;
}
