import { setFlagsFromString } from 'node:v8';
import { Logger } from '../../lib/logger';

/** How far V8 lets the old generation grow past what the last full GC found live, percent. */
export const DAEMON_HEAP_GROWING_PERCENT = 100;

const HEAP_FLAGS = /--(heap-growing-percent|max-old-space-size|max-heap-size|initial-old-space-size)\b/;

/**
 * The provisioner's heap policy, for its own process only (never from the daemon library, which
 * the demo and specs run inside other processes): V8 grows the old generation to up to four times
 * what is live when its collector is fast, and a daemon whose live set is a few tens of MiB then
 * holds hundreds of MiB of RSS by the end of a 100,000-node run. Capping the growth at twice the
 * live set keeps RSS flat once the fleet is admitted, for a few percent of CPU
 * (docs/provisioner/behaviour.md, "Memory"). V8 reads this flag at every collection, so setting it
 * at start takes effect.
 *
 * A heap flag given to node (`NODE_OPTIONS` or the command line) wins: nothing is changed then.
 * Returns what was done, for the start-up log line.
 */
export function applyDaemonHeapPolicy(
  logger: Logger,
  execArgv: readonly string[] = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
  growingPercent = DAEMON_HEAP_GROWING_PERCENT,
): 'applied' | 'left to node options' {
  if (execArgv.some((a) => HEAP_FLAGS.test(a)) || HEAP_FLAGS.test(nodeOptions)) {
    logger.info('heap: node options set the heap policy; left as given');
    return 'left to node options';
  }
  setFlagsFromString(`--heap-growing-percent=${growingPercent}`);
  logger.debug(
    { heapGrowingPercent: growingPercent },
    `heap: old generation growth capped at ${1 + growingPercent / 100} times the live set`,
  );
  return 'applied';
}
