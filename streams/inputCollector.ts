import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** V8's own collector, as `--expose-gc` gives it. */
export type Collect = (options: { type: 'minor' | 'major' }) => void;

/**
 * How much input between two collections. A message read from NATS leaves three to four times its
 * size in buffers behind (the socket's reads, and nats.js's buffer grown by doubling while a message
 * larger than one read arrives), none of it young-heap memory V8 counts: left to V8, up to 64 MiB
 * of it waited for a collection under a junk flood (docs/chaos.md). At 2 MiB a flood's garbage
 * stays near 8 MiB, for a minor collection (about a millisecond) per 2 MiB.
 */
export const COLLECT_EVERY_BYTES = 2 * 1024 * 1024;

/**
 * V8's collector, reached without starting Node with `--expose-gc`: the flag turned on now takes
 * effect in contexts made afterwards, so a new context has `gc` and the daemon's own has not.
 */
function v8Collector(): Collect {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as Collect;
}

/**
 * Counts the bytes a daemon receives from outside (NATS messages on the subjects anyone may
 * publish to, Incus event frames) and runs a minor collection after every `everyBytes` of them, so
 * that input the daemon has already refused (or finished with) does not stay in memory until V8
 * gets round to it: what a flood of junk costs in memory is bounded by `everyBytes`, not by V8's
 * heuristics. Input below the threshold costs a sum; the collector is reached at the first
 * collection.
 */
export class InputCollector {
  private since = 0;
  private collect: Collect | undefined;
  /** Collections run so far. */
  collections = 0;

  constructor(
    private readonly everyBytes = COLLECT_EVERY_BYTES,
    private readonly collector: () => Collect = v8Collector,
  ) {}

  /** `bytes` more were received. */
  received(bytes: number): void {
    this.since += bytes;
    if (this.since < this.everyBytes) return;
    this.since = 0;
    this.collect ??= this.collector();
    this.collect({ type: 'minor' });
    this.collections++;
  }
}

/** The process's one collector: every input path adds to the same count. */
export const inputCollector = new InputCollector();
