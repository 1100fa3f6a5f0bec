import { PerformanceEntry, PerformanceObserver, constants, performance } from 'node:perf_hooks';
import { COLLECT_EVERY_BYTES, Collect, InputCollector } from '../../streams/inputCollector';
import { waitFor } from '../helpers/waitFor';

describe('InputCollector: a minor collection after every so many bytes of outside input', () => {
  it('collects once per threshold crossed, not before, and reaches the collector only when it first collects', () => {
    const runs: Parameters<Collect>[0][] = [];
    let reached = 0;
    const collector = new InputCollector(1000, () => {
      reached++;
      return (options) => void runs.push(options);
    });
    collector.received(600);
    collector.received(399);
    expect(runs).toEqual([]);
    expect(reached).toBe(0);
    collector.received(1);
    expect(runs).toEqual([{ type: 'minor' }]);
    // The count starts again after a collection: one large message is one collection, not several.
    collector.received(5000);
    collector.received(999);
    expect(runs).toHaveLength(2);
    expect(collector.collections).toBe(2);
    expect(reached).toBe(1);
  });

  it("runs V8's own minor collection, reached without --expose-gc", async () => {
    expect(COLLECT_EVERY_BYTES).toBe(2 * 1024 * 1024);
    const minor: PerformanceEntry[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries())
        if ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR)
          minor.push(entry);
    });
    observer.observe({ entryTypes: ['gc'] });
    try {
      const collector = new InputCollector(COLLECT_EVERY_BYTES);
      collector.received(COLLECT_EVERY_BYTES - 1);
      const from = performance.now();
      collector.received(1);
      const to = performance.now();
      expect(collector.collections).toBe(1);
      await waitFor(() => minor.some((e) => e.startTime >= from && e.startTime <= to), 'a minor collection within the call', 5000);
    } finally {
      observer.disconnect();
    }
  });
});
