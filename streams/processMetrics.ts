import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * prom-client's gauges whose names end in `_total` (`promtool check metrics`: non-counter metrics
 * should not have "_total" suffix). Each has a twin without the suffix carrying the same count
 * (`nodejs_active_handles` ...), so dropping them loses nothing.
 */
export const MISNAMED_PROCESS_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/**
 * Registers the process and Node.js series (`process_resident_memory_bytes`,
 * `process_cpu_seconds_total`, `nodejs_heap_size_used_bytes`, `nodejs_eventloop_lag_seconds` ...)
 * on `registry`, without prom-client's `_total` gauges, so the exposition passes promtool's lint.
 */
export function registerProcessMetrics(registry: Registry): void {
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_PROCESS_GAUGES) registry.removeSingleMetric(name);
}
