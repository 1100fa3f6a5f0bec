import { progressLine, summaryLines } from '../../bin/fleetReport';
import { fleetStats, newFleetCounters } from '../../streams/simulate/simulatedFleetStats';

describe("rxfleet simulate's report", () => {
  const stats = fleetStats([], 0, { ...newFleetCounters(), configured: 5, duplicates: 2, configuredByTwo: 1 });

  it('says in text how many nodes two instances configured, beside the duplicates, in the progress line and the summary', () => {
    expect(progressLine('text', stats, 1500)).toContain(' duplicates 2 by-two 1 ');
    const lines = summaryLines('text', stats, 1500);
    expect(lines).toContain('  duplicates:         2');
    expect(lines).toContain('  configured by two:  1');
    expect(lines.indexOf('  configured by two:  1')).toBe(lines.indexOf('  duplicates:         2') + 1);
  });

  it('carries the same count in JSON as configuredByTwo', () => {
    expect(JSON.parse(summaryLines('json', stats, 1500)[0])).toMatchObject({ type: 'summary', duplicates: 2, configuredByTwo: 1 });
  });
});
