import type { NodeCount } from './recordTypes';

export type { InstanceMode, InstanceRecord, NodeCount } from './recordTypes';
export { isInstanceRecord } from './recordGuards';

/**
 * The node in a collection longest, from entries in the order they entered (a Map's order), or
 * undefined; `skip` passes over entries that no longer count.
 */
export function oldestOf(
  entries: Iterable<[string, number]>,
  wall: (at: number) => string,
  skip: (node: string) => boolean = () => false,
): NodeCount {
  let count = 0;
  let oldest: { node: string; at: number } | undefined;
  for (const [node, at] of entries) {
    if (skip(node)) continue;
    count++;
    if (oldest === undefined || at < oldest.at) oldest = { node, at };
  }
  return oldest === undefined ? { count } : { count, oldest: { node: oldest.node, since: wall(oldest.at) } };
}
