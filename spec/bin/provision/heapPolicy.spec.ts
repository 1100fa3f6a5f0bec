import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { RXFLEET_BIN } from '../../helpers/rxfleetProcess';
import { silentLogger } from '../../../lib/logger';
import { applyDaemonHeapPolicy } from '../../../bin/provision/heapPolicy';

describe('the provisioner process heap policy', () => {
  it('leaves the heap alone when node was given a heap flag, on its command line or in NODE_OPTIONS', () => {
    expect(applyDaemonHeapPolicy(silentLogger, ['--max-old-space-size=512'], '')).toBe('left to node options');
    expect(applyDaemonHeapPolicy(silentLogger, [], '--enable-source-maps --heap-growing-percent=30')).toBe('left to node options');
  });

  it('V8 honours the growth cap when it is set at start, as the policy does: the heap of a churning process stays smaller', () => {
    // A child process running the built module, so this suite's own heap is not touched: a live set
    // of some tens of MB replaced over time, with short-lived garbage beside it.
    const churn = `
      const { PerformanceObserver, constants } = require('node:perf_hooks');
      const policy = require(${JSON.stringify(join(dirname(RXFLEET_BIN), 'provision/heapPolicy.js'))});
      // A tight cap (10 %) so the difference is plain; the daemon's own (100 %) was measured by bench:provision.
      if (process.argv[1] === 'capped') policy.applyDaemonHeapPolicy({ info() {}, debug() {} }, [], '', 10);
      let majors = 0;
      new PerformanceObserver((list) => { for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++; }).observe({ entryTypes: ['gc'] });
      const live = []; let peak = 0;
      for (let round = 0; round < 300; round++) {
        for (let i = 0; i < 2000; i++) live.push({ key: 'node-' + round + '-' + i, pad: new Array(8).fill(i) });
        if (live.length > 150000) live.splice(0, 2000);
        for (let j = 0; j < 20000; j++) JSON.parse('{"a":[1,2,3],"b":"' + j + '"}');
        peak = Math.max(peak, process.memoryUsage().heapTotal);
      }
      setTimeout(() => process.stdout.write(JSON.stringify({ majors, peak })), 10);`;
    const run = (mode: string): { majors: number; peak: number } =>
      JSON.parse(execFileSync(process.execPath, ['-e', churn, mode], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } })) as {
        majors: number;
        peak: number;
      };
    const capped = run('capped');
    const uncapped = run('default');
    // More full collections, a smaller heap: the flag set at run time took effect.
    expect(capped.majors).toBeGreaterThan(uncapped.majors);
    expect(capped.peak).toBeLessThan(uncapped.peak);
  });
});
